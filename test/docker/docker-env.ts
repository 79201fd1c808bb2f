/**
 * The real Docker Engine the docker tests use, and the images they run. Missing
 * engine = failed test (scripts/test-env.sh starts it), never a skipped one.
 */
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { buildImages, type BuildImagesResult, type BuiltImage } from '../../src/images/build-images.js';
import { removeInstanceContainers } from '../../src/sandbox/remove-instance-containers.js';

export const docker = new Docker();

export async function requireDocker(): Promise<void> {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`Docker Engine does not answer (${(error as Error).message}); run scripts/test-env.sh as root first`);
  }
}

let images: Promise<BuildImagesResult> | undefined;

/** Builds (or finds, by input hash) the sandbox images once per test file; needs `npm run build` first. */
export function testImages(): Promise<BuildImagesResult> {
  images ??= requireDocker().then(() => buildImages({ docker }));
  return images;
}

/** The python images of a build; a machine without python3 fails the test (scripts/test-env.sh installs it), never skips it. */
export function pythonImages(images: BuildImagesResult): { pythonBase: BuiltImage; pythonRunner: BuiltImage } {
  if (images.pythonBase === undefined || images.pythonRunner === undefined) {
    throw new Error(`the python images were not built (${images.pythonSkipped}); run scripts/test-env.sh as root first`);
  }
  return { pythonBase: images.pythonBase, pythonRunner: images.pythonRunner };
}

/** An instance id no other test or core shares, so cleanup touches only this test's containers. */
export function uniqueInstanceId(prefix: string): string {
  return `test-${prefix}-${randomBytes(4).toString('hex')}`;
}

export async function containersOf(instanceId: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: JSON.stringify({ label: [`uhlp.dev/instance=${instanceId}`] }) });
}

/** Last-resort cleanup for a failed test; a passing test has already left nothing. */
export async function sweep(instanceId: string): Promise<void> {
  await removeInstanceContainers(instanceId, { docker });
}
