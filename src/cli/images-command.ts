/**
 * `uhlp images build [--force] [--prune]`: builds the sandbox images locally
 * (FROM scratch + the host's Node and its libraries, then the jit-runner and the llm-orchestrator), tagged
 * by a hash of their inputs and rebuilt only when an input changed.
 */
import { parseArgs } from 'node:util';
import { buildImages } from '../images/build-images.js';
import { formatBuiltImages } from '../images/images-report.js';

export const IMAGES_USAGE = 'uhlp images build [--force] [--prune] [--verbose]';

export async function imagesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { force: { type: 'boolean', default: false }, prune: { type: 'boolean', default: false }, verbose: { type: 'boolean', default: false } },
  });
  if (positionals[0] !== 'build' || positionals.length !== 1) throw new Error(`usage: ${IMAGES_USAGE}`);
  const result = await buildImages({
    force: values.force,
    prune: values.prune,
    onProgress: values.verbose ? (line) => process.stderr.write(`${line}\n`) : undefined,
  });
  process.stdout.write(`${formatBuiltImages(result)}\n`);
  return 0;
}
