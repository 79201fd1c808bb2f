/**
 * Adoption by labels: the containers a restarted core can hand back to their
 * pools, found by the labels it gave them (its instance, the app, the pool;
 * sandbox-labels.ts), so that a restart reuses warm sandboxes instead of
 * starting new ones. What cannot be handed back (dead, deaf, or of another
 * configuration or image) is removed rather than leaked.
 */
import { rm } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { Logger } from '../logger.js';
import { CONTAINER_PORT, runnerSocketPath } from './docker-container-spec.js';
import { SandboxClient } from './sandbox-client.js';
import type { SandboxEndpoint } from './sandbox-driver.js';
import { LABEL_APP, LABEL_CONFIG, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';

/** A running container of the pool that answers, with what its labels say of it. */
export interface AdoptableContainer {
  readonly container: Docker.Container;
  readonly endpoint: SandboxEndpoint;
  readonly socketDir: string | undefined;
  readonly workDir: string;
}

export interface FindAdoptableOptions {
  readonly docker: Docker;
  readonly logger: Logger;
  readonly instanceId: string;
  readonly appId: string;
  readonly poolName: string;
  /** The configuration containers must have been started with; any when undefined. */
  readonly wanted?: { readonly configHash: string; readonly image: string };
  /** Containers the driver holds already: never adopted twice. */
  readonly isHeld: (containerId: string) => boolean;
}

/** The pool's containers that can be adopted; the unusable ones of the pool are removed on the way. */
export async function adoptableContainers(options: FindAdoptableOptions): Promise<AdoptableContainer[]> {
  const { docker, wanted } = options;
  // The image the tag names now: a container of an image rebuilt under the same tag is outdated.
  const wantedImage = wanted ? await docker.getImage(wanted.image).inspect().then((image) => image.Id, () => undefined) : undefined;
  const filters = {
    label: [`${LABEL_INSTANCE}=${options.instanceId}`, `${LABEL_APP}=${options.appId}`, `${LABEL_POOL}=${options.poolName}`],
  };
  const found = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  const adoptable: AdoptableContainer[] = [];
  for (const info of found) {
    if (options.isHeld(info.Id)) continue;
    const container = docker.getContainer(info.Id);
    const socketDir = info.Labels[LABEL_SOCKET_DIR] || undefined;
    const workDir = info.Labels[LABEL_WORK_DIR] || undefined;
    const port = info.Ports.find((p) => p.PrivatePort === CONTAINER_PORT && p.IP === '127.0.0.1')?.PublicPort;
    const endpoint: SandboxEndpoint | undefined = socketDir
      ? { kind: 'unix', socketPath: runnerSocketPath(socketDir) }
      : port
        ? { kind: 'tcp', host: '127.0.0.1', port }
        : undefined;
    const client = endpoint && info.State === 'running' ? new SandboxClient(endpoint) : undefined;
    const current = (wanted === undefined || info.Labels[LABEL_CONFIG] === wanted.configHash) && (wantedImage === undefined || info.ImageID === wantedImage);
    const answers = client && current ? await client.probe(2000) : false;
    client?.close();
    if (!endpoint || !answers || !workDir) {
      // Dead, deaf or outdated leftovers of this instance: remove them rather than leak them.
      options.logger.info({ sandbox: info.Id.slice(0, 12), state: info.State, current }, 'removing unusable labelled container');
      await container.remove({ force: true, v: true }).catch(() => undefined);
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
      if (workDir) await rm(workDir, { recursive: true, force: true });
      continue;
    }
    adoptable.push({ container, endpoint, socketDir, workDir });
  }
  return adoptable;
}
