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
import type { CommandGroup, CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf } from './command-line.js';
import { EXIT_OK } from './exit-codes.js';

const FORCE = { type: 'boolean', help: 'Rebuild even when no input changed' } as const;
const VERBOSE = { type: 'boolean', help: "Print each build step's output on stderr" } as const;
const BUILD_FLAGS = {
  force: FORCE,
  prune: { type: 'boolean', help: 'Remove the runner images of earlier builds (their hashed tags), keeping the new ones' },
  'sandboxes-only': { type: 'boolean', help: 'Build the runner images only, not the chart\'s (uhlp/uhlp, uhlp/redis)' },
  verbose: VERBOSE,
} as const;
const SAVE_FLAGS = { force: FORCE, verbose: VERBOSE } as const;

export const IMAGES_BUILD_COMMAND: CommandSpec<typeof BUILD_FLAGS> = {
  name: 'images build',
  summary: 'Builds the images locally, with no registry: the runners on FROM scratch bases, and the chart\'s core and Redis images',
  flags: BUILD_FLAGS,
  examples: ['uhlp images build', 'uhlp images build --sandboxes-only --verbose'],
  notes: ['Images are tagged by a hash of their inputs and by the package version, and rebuilt only when an input changed (docs/docker.md).'],
};

export const IMAGES_SAVE_COMMAND: CommandSpec<typeof SAVE_FLAGS> = {
  name: 'images save',
  summary: 'Builds what is missing and writes every image to one tar, for docker load or ctr images import on the nodes',
  usage: ['<file.tar> [flags]'],
  positionals: { min: 1, max: 1 },
  flags: SAVE_FLAGS,
  examples: ['uhlp images save uhlp-images.tar'],
};

export const IMAGES_GROUP: CommandGroup = {
  name: 'images',
  summary: 'Local image builds for the docker and pod drivers and the Helm chart (docs/docker.md)',
  commands: [IMAGES_BUILD_COMMAND, IMAGES_SAVE_COMMAND],
};

export async function imagesCommand(argv: string[]): Promise<number> {
  const chosen = subcommandOf(IMAGES_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const build = chosen.spec === IMAGES_BUILD_COMMAND;
  const save = !build;
  // save's flags are some of build's: one type reads both.
  const line = parseCommandLine(chosen.spec as CommandSpec<typeof BUILD_FLAGS>, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals: rest } = line;
  // Docker's client and the builders load once the command line is read: --help answers at once.
  const [{ default: Docker }, { buildImages }, { buildClusterImages }, { formatBuiltImage, formatBuiltImages }, { saveImages }] = await Promise.all([
    import('dockerode'),
    import('../images/build-images.js'),
    import('../images/cluster-images.js'),
    import('../images/images-report.js'),
    import('../images/save-images.js'),
  ]);
  const docker = new Docker();
  const common = { docker, force: values.force === true, onProgress: values.verbose ? (text: string) => process.stderr.write(`${text}\n`) : undefined };
  const sandboxes = await buildImages({ ...common, prune: values.prune === true });
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
  return EXIT_OK;
}
