/**
 * Cleanup by labels: removes what a core instance left in Docker, its containers
 * (running or not) and their host directories, found by the instance label. The
 * last step of a clean stop, and a way to clear what a crashed core left.
 */
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import Docker from 'dockerode';
import { LABEL_APP, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';

export interface RemoveInstanceOptions {
  /** Engine client. @defaultValue `new Docker()` */
  readonly docker?: Docker;
  /**
   * Pools whose containers stay, as `app/pool` keys: after a restart, this removes
   * the containers of pools that no longer exist while the live ones are adopted.
   * @defaultValue none (every container of the instance is removed)
   */
  readonly keepPools?: ReadonlySet<string>;
}

/**
 * Removes the containers labelled with `instanceId`, running or not, and their
 * socket directories. Returns how many were removed.
 */
export async function removeInstanceContainers(instanceId: string, options: RemoveInstanceOptions = {}): Promise<number> {
  const docker = options.docker ?? new Docker();
  const filters = { label: [`${LABEL_INSTANCE}=${instanceId}`] };
  const listed = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  const found = listed.filter((info) => !options.keepPools?.has(`${info.Labels[LABEL_APP]}/${info.Labels[LABEL_POOL]}`));
  await Promise.all(
    found.map(async (info) => {
      await docker
        .getContainer(info.Id)
        .remove({ force: true, v: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 404 && error.statusCode !== 409) throw error;
        });
      for (const label of [LABEL_SOCKET_DIR, LABEL_WORK_DIR]) {
        const dir = info.Labels[label];
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    }),
  );
  // The socket roots too, once empty (a root another driver still uses is not).
  const roots = new Set(
    found.flatMap((info) => [info.Labels[LABEL_SOCKET_DIR], info.Labels[LABEL_WORK_DIR]]).filter(Boolean).map((dir) => path.dirname(dir!)),
  );
  await Promise.all([...roots].map((root) => rmdir(root).catch(() => undefined)));
  return found.length;
}
