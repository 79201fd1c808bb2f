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
import { parseArgs } from 'node:util';
import { loadStateTarget, type Environment } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { buildBundle, openBundle, readBundleDir } from '../contract/cs-bundle/function-bundle.js';
import { checkAlias, checkSha256, isSha256, parseFunctionName } from '../functions/function-ref.js';
import type { VerifiedBundle } from '../contract/cs-bundle/function-bundle.js';
import { memoryKv, runLocal } from './fn-run.js';
import { RedisRuntimeStore } from '../state/redis-runtime-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';

export const FN_USAGE =
  'uhlp fn publish <dir> --app A --function ns/fn [--alias X] [--dry-run] | versions --app A --function ns/fn | alias set --app A --function ns/fn <alias> <version> | get <sha256> --app A [--out F] | run <dir|sha256> --event F [--app A] [--kv-endpoint redis://...] | logs <activation>  (store: --state redis://... or UHLP_STATE)';

const OPTIONS = {
  app: { type: 'string' },
  function: { type: 'string' },
  alias: { type: 'string' },
  'dry-run': { type: 'boolean' },
  state: { type: 'string' },
  out: { type: 'string' },
  event: { type: 'string' },
  'kv-endpoint': { type: 'string' },
} as const;

export interface FnCommandIo {
  /** @defaultValue process.stdout.write */
  readonly write?: (text: string) => void;
  /** Stands for the process's environment (config.ts reads that one). */
  readonly env?: Environment;
}

export async function fnCommand(argv: string[], io: FnCommandIo = {}): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS, strict: true });
  const print = (value: unknown): void => (io.write ?? ((text: string) => void process.stdout.write(text)))(`${JSON.stringify(value, null, 2)}\n`);
  const [sub, ...rest] = positionals;
  const app = (): string => {
    if (values.app === undefined || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(values.app)) throw usage('--app <appId> is required (the tenant of the function)');
    return values.app;
  };
  const withStore = async <T>(use: (store: RuntimeStore) => Promise<T>): Promise<T> => {
    const target = loadStateTarget(values.state, io.env);
    const url = target.state;
    if (url === undefined || !/^rediss?:\/\//.test(url)) {
      throw new UhlpError('UHLP_CONFIG_INVALID', 'this command needs the cores\' Redis: --state redis://... or UHLP_STATE (a core on the memory store takes functions over MCP: core.fn.publish)', { field: 'state' });
    }
    const store = await RedisRuntimeStore.connect({ url, keyPrefix: target.keyPrefix, timeoutMs: 5000 });
    try {
      return await use(store);
    } finally {
      await store.close();
    }
  };

  switch (sub) {
    case 'publish': {
      if (rest.length !== 1) throw usage('uhlp fn publish <dir> --app A --function ns/fn');
      const bundle = buildBundle(await readBundleDir(rest[0]!));
      if (values['dry-run'] === true) {
        print({ sha256: bundle.sha256, bytes: bundle.bytes.length, dryRun: true });
        return 0;
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
      return 0;
    }
    case 'versions': {
      const tenant = app();
      const name = parseFunctionName(values.function);
      const listed = await withStore(async (store) => ({
        versions: await store.functions.listVersions(tenant, name.namespace, name.function),
        aliases: await store.functions.listAliases(tenant, name.namespace, name.function),
      }));
      print({ app: tenant, function: values.function, ...listed });
      return 0;
    }
    case 'alias': {
      if (rest[0] !== 'set' || rest.length !== 3) throw usage('uhlp fn alias set --app A --function ns/fn <alias> <version>');
      const tenant = app();
      const name = parseFunctionName(values.function);
      const alias = checkAlias(rest[1]);
      const version = Number(rest[2]);
      if (!Number.isSafeInteger(version) || version < 1) throw new UhlpError('UHLP_FN_REF_INVALID', `version must be a positive integer, got "${rest[2]}"`, { field: 'version' });
      await withStore((store) => store.functions.setAlias(tenant, name.namespace, name.function, alias, version));
      print({ app: tenant, function: values.function, alias, version });
      return 0;
    }
    case 'get': {
      if (rest.length !== 1) throw usage('uhlp fn get <sha256> --app A');
      const sha256 = checkSha256(rest[0]);
      const tenant = app();
      const bundle = await withStore(async (store) => fetchStored(store, tenant, sha256));
      if (values.out !== undefined) await writeFile(values.out, bundle.bytes);
      print({ app: tenant, sha256, bytes: bundle.bytes.length, manifest: bundle.manifest, functionJs: bundle.files.functionJs });
      return 0;
    }
    case 'run': {
      if (rest.length !== 1 || values.event === undefined) throw usage('uhlp fn run <dir|sha256> --event event.json');
      const event = await readEvent(values.event);
      const source = rest[0]!;
      const tenant = values.app ?? 'local';
      let bundle: VerifiedBundle;
      if (isSha256(source)) bundle = await withStore(async (store) => fetchStored(store, app(), source));
      else bundle = buildBundle(await readBundleDir(source));
      const kvEndpoint = values['kv-endpoint'];
      let remote: RedisRuntimeStore | undefined;
      if (kvEndpoint !== undefined) {
        if (!/^rediss?:\/\//.test(kvEndpoint)) throw new UhlpError('UHLP_CONFIG_INVALID', `--kv-endpoint must be a redis:// URL, got "${kvEndpoint}"`, { field: 'kv-endpoint' });
        remote = await RedisRuntimeStore.connect({ url: kvEndpoint, keyPrefix: loadStateTarget(undefined, io.env).keyPrefix, timeoutMs: 5000 });
      }
      try {
        const output = await runLocal({ bundle, event, tenant, kv: remote?.kv ?? memoryKv() });
        print(output);
        return output.result.resultType === 'error' ? 1 : 0;
      } finally {
        await remote?.close();
      }
    }
    case 'logs': {
      if (rest.length !== 1) throw usage('uhlp fn logs <activation>');
      const activation = rest[0]!;
      const chunks = await withStore((store) => store.functions.readLogs(activation));
      if (chunks === undefined) throw new UhlpError('UHLP_FN_ACTIVATION_NOT_FOUND', `no logs are kept for activation ${activation.slice(0, 80)}`, { activation: activation.slice(0, 80) });
      const lines = chunks.flatMap((chunk) => (JSON.parse(chunk) as { lines: unknown[] }).lines);
      print({ activation, lines });
      return 0;
    }
    default:
      throw usage(`unknown fn command "${sub ?? ''}"`);
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

function usage(message: string): UhlpError {
  return new UhlpError('UHLP_CONFIG_INVALID', `${message}\nusage: ${FN_USAGE}`);
}
