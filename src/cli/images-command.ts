/**
 * `uhlp images build [--force] [--prune] [--sandboxes-only]`: builds the images locally
 * (FROM scratch + the host's Node and its libraries, then the jit-runner, the
 * llm-orchestrator and the csjs runner; FROM scratch + the host's CPython and its standard
 * library, then the python runner; and the images the Helm chart runs: uhlp/uhlp for the core and the
 * operator, uhlp/redis), tagged by a hash of their inputs and rebuilt only when an input changed.
 *
 * `uhlp images save <file.tar>`: builds what is missing and writes every image to one tar
 * for `docker load` or `ctr images import` on the nodes of a cluster without a registry.
 */
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { buildImages } from '../images/build-images.js';
import { buildClusterImages } from '../images/cluster-images.js';
import { formatBuiltImage, formatBuiltImages } from '../images/images-report.js';
import { saveImages } from '../images/save-images.js';

export const IMAGES_USAGE = 'uhlp images build [--force] [--prune] [--sandboxes-only] [--verbose] | uhlp images save <file.tar>';

export async function imagesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      force: { type: 'boolean', default: false },
      prune: { type: 'boolean', default: false },
      'sandboxes-only': { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
    },
  });
  const [sub, ...rest] = positionals;
  const build = sub === 'build' && rest.length === 0;
  const save = sub === 'save' && rest.length === 1;
  if (!build && !save) throw new Error(`usage: ${IMAGES_USAGE}`);
  const docker = new Docker();
  const common = { docker, force: values.force, onProgress: values.verbose ? (line: string) => process.stderr.write(`${line}\n`) : undefined };
  const sandboxes = await buildImages({ ...common, prune: values.prune });
  const cluster = values['sandboxes-only'] && build ? undefined : await buildClusterImages(common);
  const lines = [formatBuiltImages(sandboxes), ...(cluster ? [cluster.core, cluster.redis].map(formatBuiltImage) : [])];
  if (save) {
    process.stderr.write(`${lines.join('\n')}\n`);
    const references = [sandboxes.jitRunner, sandboxes.llmOrchestrator, sandboxes.csjsRunner, sandboxes.mcpHost, sandboxes.pythonRunner, cluster!.core, cluster!.redis].flatMap((image) => image === undefined ? [] : [
      image.reference,
      `${image.reference.slice(0, image.reference.lastIndexOf(':'))}:latest`,
    ]);
    await saveImages(docker, references, rest[0]!);
    process.stdout.write(`saved ${references.join(' ')} to ${rest[0]}\n`);
  } else {
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return 0;
}
