/**
 * `uhlp fn`: cs-js functions from the command line.
 *
 *   uhlp fn publish <dir> --app <appId> --function <ns/fn> [--alias <name>] [--dry-run]
 *   uhlp fn versions --app <appId> --function <ns/fn>
 *   uhlp fn alias set --app <appId> --function <ns/fn> <alias> <version>
 *   uhlp fn get <sha256> --app <appId> [--out <file.tar>]
 *   uhlp fn run <dir | sha256> --event <event.json> [--app <appId>] [--kv-endpoint redis://...]
 *   uhlp fn logs <activation>
 *
 * Every command but `publish --dry-run` and `run <dir>` reads or writes the
 * core's runtime store: `--state` (or UHLP_STATE) names the Redis the cores
 * use, and UHLP_STATE_PREFIX its key prefix. A core on the memory store is
 * published to over MCP instead (`core.fn.publish`). The tenant of a function
 * is the app (`--app`). Output is JSON, one document per command.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { loadStateTarget, type Environment } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { buildBundle, openBundle, readBundleDir } from '../contract/cs-bundle/function-bundle.js';
import { checkAlias, checkSha256, isSha256, parseFunctionName } from '../functions/function-ref.js';
import type { VerifiedBundle } from '../contract/cs-bundle/function-bundle.js';
import type { RedisRuntimeStore } from '../state/redis-runtime-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { someFlags, type CommandGroup, type CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf, usageError } from './command-line.js';
import { EXIT_FAILURE, EXIT_OK } from './exit-codes.js';
import { isRedisUrl } from '../state/redis-url.js';

const FLAGS = {
  app: { type: 'string', value: 'A', help: 'The app the function belongs to (its tenant)' },
  function: { type: 'string', value: 'ns/fn', help: 'The function, as <namespace>/<name>' },
  alias: { type: 'string', value: 'X', help: 'Also point this alias (prod, canary, ...) at the version published' },
  'dry-run': { type: 'boolean', help: 'Print the bundle\'s sha256 and store nothing' },
  state: { type: 'string', value: 'redis://...', help: "The cores' runtime store (UHLP_STATE; the key prefix is UHLP_STATE_PREFIX)" },
  out: { type: 'string', value: 'F', help: 'Also write the bundle\'s canonical tar to this file' },
  event: { type: 'string', value: 'F', help: 'A JSON file: the event the function is called with' },
  'kv-endpoint': { type: 'string', value: 'redis://...', help: 'cs.kv on this Redis instead of in memory' },
} as const;

type FnFlags = typeof FLAGS;
type FnSpec = CommandSpec<FnFlags>;

const only = (...names: ReadonlyArray<keyof FnFlags>): FnFlags => someFlags(FLAGS, ...names);

const STORE_NOTE = 'Reads and writes the cores\' Redis (--state or UHLP_STATE); a core on the memory store takes functions over MCP (core.fn.publish).';

export const FN_COMMANDS: readonly FnSpec[] = [
  {
    name: 'fn publish',
    summary: 'Publishes function.js + manifest.json as a canonical tar addressed by sha256, as the next version',
    usage: ['<dir> --app A --function ns/fn [flags]', '<dir> --dry-run'],
    positionals: { min: 1, max: 1 },
    flags: only('app', 'function', 'alias', 'dry-run', 'state'),
    examples: ['uhlp fn publish ./reconcile --app pay --function payments/reconcile --alias prod --state redis://127.0.0.1:6379', 'uhlp fn publish ./reconcile --dry-run'],
    notes: [STORE_NOTE],
  },
  {
    name: 'fn versions',
    summary: "A function's versions and aliases",
    usage: ['--app A --function ns/fn [flags]'],
    flags: only('app', 'function', 'state'),
    examples: ['uhlp fn versions --app pay --function payments/reconcile --state redis://127.0.0.1:6379'],
    notes: [STORE_NOTE],
  },
  {
    name: 'fn alias',
    summary: 'Moves an alias to a version',
    usage: ['set <alias> <version> --app A --function ns/fn [flags]'],
    positionals: { min: 3, max: 3 },
    flags: only('app', 'function', 'state'),
    examples: ['uhlp fn alias set prod 2 --app pay --function payments/reconcile --state redis://127.0.0.1:6379'],
    notes: [STORE_NOTE],
  },
  {
    name: 'fn get',
    summary: 'Reads a stored bundle: its manifest and function.js',
    usage: ['<sha256> --app A [flags]'],
    positionals: { min: 1, max: 1 },
    flags: only('app', 'out', 'state'),
    examples: ['uhlp fn get 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 --app pay --out bundle.tar'],
    notes: [STORE_NOTE],
  },
  {
    name: 'fn run',
    summary: 'Runs a bundle on this machine with the isolate engine and cs checks of the csjs runner; exits 1 when it answers an error',
    usage: ['<dir|sha256> --event F [flags]'],
    positionals: { min: 1, max: 1 },
    flags: only('event', 'app', 'kv-endpoint', 'state'),
    examples: ['uhlp fn run ./reconcile --event event.json', 'uhlp fn run ./reconcile --event event.json --kv-endpoint redis://127.0.0.1:6379'],
    notes: ['A <dir> runs without a store; a sha256 is read from the cores\' Redis (--state or UHLP_STATE). Network only to the manifest\'s http.allowHosts.'],
  },
  {
    name: 'fn logs',
    summary: "An activation's log lines (the x-request-id of the turn that ran it)",
    usage: ['<activation> [flags]'],
    positionals: { min: 1, max: 1 },
    flags: only('state'),
    examples: ['uhlp fn logs 0f8c2a54-6d1e-4f57-9d3c-2b7f1e0a9c44 --state redis://127.0.0.1:6379'],
    notes: [STORE_NOTE],
  },
];

export const FN_GROUP: CommandGroup = {
  name: 'fn',
  summary: 'cs-js functions: publish, versions, aliases, read, run locally, logs (docs/csjs.md); output is JSON',
  commands: FN_COMMANDS,
};

export interface FnCommandIo {
  /** @defaultValue process.stdout.write */
  readonly write?: (text: string) => void;
  /** Stands for the process's environment (config.ts reads that one). */
  readonly env?: Environment;
}

export async function fnCommand(argv: string[], io: FnCommandIo = {}): Promise<number> {
  const chosen = subcommandOf(FN_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const spec = chosen.spec as FnSpec;
  const line = parseCommandLine(spec, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals: rest } = line;
  const sub = spec.name.slice('fn '.length);
  const print = (value: unknown): void => (io.write ?? ((text: string) => void process.stdout.write(text)))(`${JSON.stringify(value, null, 2)}\n`);
  const app = (): string => {
    if (values.app === undefined || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(values.app)) throw usageError(spec, '--app <appId> is required (the tenant of the function)');
    return values.app;
  };
  const withStore = async <T>(use: (store: RuntimeStore) => Promise<T>): Promise<T> => {
    const target = loadStateTarget(values.state, io.env);
    const url = target.state;
    if (url === undefined || !isRedisUrl(url)) {
      throw new UhlpError('UHLP_CONFIG_INVALID', 'this command needs the cores\' Redis: --state redis://... or UHLP_STATE (a core on the memory store takes functions over MCP: core.fn.publish)', { field: 'state' });
    }
    // Redis's client, and the isolate engine below, load only for the commands that use them: --help answers at once.
    const { RedisRuntimeStore } = await import('../state/redis-runtime-store.js');
    const store = await RedisRuntimeStore.connect({ url, keyPrefix: target.keyPrefix, timeoutMs: 5000 });
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  };

  switch (sub) {
    case 'publish': {
      const bundle = buildBundle(await readBundleDir(rest[0]!));
      if (values['dry-run'] === true) {
        print({ sha256: bundle.sha256, bytes: bundle.bytes.length, dryRun: true });
        return EXIT_OK;
      }
      const tenant = app();
      const name = parseFunctionName(values.function);
      const alias = values.alias === undefined ? undefined : checkAlias(values.alias);
      const published = await withStore(async (store) => {
        await store.functions.putBundle(tenant, bundle.sha256, bundle.bytes);
        const version = await store.functions.publishVersion(tenant, name.namespace, name.function, bundle.sha256);
        if (alias !== undefined) await store.functions.setAlias(tenant, name.namespace, name.function, alias, version.version);
        return version;
      });
      print({ app: tenant, function: values.function, sha256: bundle.sha256, version: published.version, created: published.created, ...(alias ? { alias } : {}) });
      return EXIT_OK;
    }
    case 'versions': {
      const tenant = app();
      const name = parseFunctionName(values.function);
      const listed = await withStore(async (store) => ({
        versions: await store.functions.listVersions(tenant, name.namespace, name.function),
        aliases: await store.functions.listAliases(tenant, name.namespace, name.function),
      }));
      print({ app: tenant, function: values.function, ...listed });
      return EXIT_OK;
    }
    case 'alias': {
      if (rest[0] !== 'set') throw usageError(spec, `the one alias command is "set", got "${rest[0]}"`);
      const tenant = app();
      const name = parseFunctionName(values.function);
      const alias = checkAlias(rest[1]);
      const version = Number(rest[2]);
      if (!Number.isSafeInteger(version) || version < 1) throw new UhlpError('UHLP_FN_REF_INVALID', `version must be a positive integer, got "${rest[2]}"`, { field: 'version' });
      await withStore((store) => store.functions.setAlias(tenant, name.namespace, name.function, alias, version));
      print({ app: tenant, function: values.function, alias, version });
      return EXIT_OK;
    }
    case 'get': {
      const sha256 = checkSha256(rest[0]);
      const tenant = app();
      const bundle = await withStore(async (store) => fetchStored(store, tenant, sha256));
      if (values.out !== undefined) await writeFile(values.out, bundle.bytes);
      print({ app: tenant, sha256, bytes: bundle.bytes.length, manifest: bundle.manifest, functionJs: bundle.files.functionJs });
      return EXIT_OK;
    }
    case 'run': {
      if (values.event === undefined) throw usageError(spec, '--event <file.json> is required (the event the function is called with)');
      const event = await readEvent(values.event);
      const source = rest[0]!;
      const tenant = values.app ?? 'local';
      let bundle: VerifiedBundle;
      if (isSha256(source)) bundle = await withStore(async (store) => fetchStored(store, app(), source));
      else bundle = buildBundle(await readBundleDir(source));
      const kvEndpoint = values['kv-endpoint'];
      let remote: RedisRuntimeStore | undefined;
      if (kvEndpoint !== undefined) {
        if (!isRedisUrl(kvEndpoint)) throw new UhlpError('UHLP_CONFIG_INVALID', `--kv-endpoint must be a redis:// or redis+sentinel:// URL, got "${kvEndpoint}"`, { field: 'kv-endpoint' });
        const { RedisRuntimeStore } = await import('../state/redis-runtime-store.js');
        remote = await RedisRuntimeStore.connect({ url: kvEndpoint, keyPrefix: loadStateTarget(undefined, io.env).keyPrefix, timeoutMs: 5000 });
      }
      const { memoryKv, runLocal } = await import('./fn-run.js');
      try {
        const output = await runLocal({ bundle, event, tenant, kv: remote?.kv ?? memoryKv() });
        print(output);
        return output.result.resultType === 'error' ? EXIT_FAILURE : EXIT_OK;
      } finally {
        await remote?.close();
      }
    }
    case 'logs': {
      const activation = rest[0]!;
      const chunks = await withStore((store) => store.functions.readLogs(activation));
      if (chunks === undefined) throw new UhlpError('UHLP_FN_ACTIVATION_NOT_FOUND', `no logs are kept for activation ${activation.slice(0, 80)}`, { activation: activation.slice(0, 80) });
      const lines = chunks.flatMap((chunk) => (JSON.parse(chunk) as { lines: unknown[] }).lines);
      print({ activation, lines });
      return EXIT_OK;
    }
    default:
      throw usageError(spec, `unknown fn command "${sub}"`);
  }
}

async function fetchStored(store: RuntimeStore, tenant: string, sha256: string): Promise<VerifiedBundle & { bytes: Buffer }> {
  const bytes = await store.functions.getBundle(tenant, sha256);
  if (bytes === undefined) throw new UhlpError('UHLP_FN_NOT_FOUND', `app ${tenant} has no bundle ${sha256.slice(0, 12)}`, { sha256 });
  return { ...openBundle(sha256, bytes), bytes };
}

async function readEvent(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--event ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, { field: 'event' });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--event ${file} is not JSON`, { field: 'event' });
  }
}
