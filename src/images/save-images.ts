/**
 * `uhlp images save`: the images a cluster runs, in one tar (the Engine's `docker save`
 * format), for `docker load` on a node or `ctr -n k8s.io images import` into containerd
 * (imagePullPolicy: Never) where there is no registry.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { UhlpError } from '../shared/errors.js';

/** Writes `references` (repository:tag, kept as tags in the archive) to `file`, atomically. */
export async function saveImages(docker: Docker, references: readonly string[], file: string): Promise<void> {
  const partial = `${file}.partial`;
  try {
    // dockerode's typings lack getImages (GET /images/get?names=...), which the engine has had since API 1.23.
    const getImages = (docker as unknown as { getImages(options: { names: string[] }): Promise<NodeJS.ReadableStream> }).getImages.bind(docker);
    const archive = await getImages({ names: [...references] });
    await pipeline(archive, createWriteStream(partial, { mode: 0o644 }));
    await rename(partial, file);
  } catch (error) {
    await rm(partial, { force: true });
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `saving ${references.join(', ')} to ${file} failed: ${(error as Error).message}`, { file });
  }
}
