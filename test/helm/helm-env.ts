/**
 * The helm binary `scripts/helm-env.sh` builds from Go modules (cached under
 * ~/.cache/uhlp/helm), run against the API server of scripts/k8s-env.sh.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { kubeconfigPath } from '../k8s/kube-env.js';
import { REPO_ROOT } from '../helpers/uhlp-process.js';

const run = promisify(execFile);
export const CHART = path.join(REPO_ROOT, 'charts', 'uhlp');
export const ALL_OPTIONS = path.join(REPO_ROOT, 'test', 'fixtures', 'helm', 'all-options.yaml');

let helmPath: Promise<string> | undefined;

/** Builds helm on first use (seconds when the Go build cache is warm); fails, never skips, without Go. */
export function helmBinary(): Promise<string> {
  helmPath ??= run(path.join(REPO_ROOT, 'scripts', 'helm-env.sh'), [], { maxBuffer: 1 << 20, timeout: 900_000 }).then(({ stdout }) => {
    const line = stdout.trim().split('\n').pop() ?? '';
    if (!line.startsWith('HELM=')) throw new Error(`scripts/helm-env.sh printed no HELM= line: ${stdout}`);
    return line.slice('HELM='.length);
  });
  return helmPath;
}

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm with the test kubeconfig; resolves with the exit code instead of throwing. */
export async function helm(args: string[]): Promise<HelmResult> {
  const binary = await helmBinary();
  try {
    const { stdout, stderr } = await run(binary, ['--kubeconfig', kubeconfigPath(), ...args], { maxBuffer: 64 << 20, env: { ...process.env, HELM_CACHE_HOME: '/tmp/uhlp-helm-cache', HELM_CONFIG_HOME: '/tmp/uhlp-helm-config', HELM_DATA_HOME: '/tmp/uhlp-helm-data' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? String(error) };
  }
}

/** helm, failing the test with helm's own message when it fails. */
export async function helmOk(args: string[]): Promise<string> {
  const result = await helm(args);
  if (result.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${result.code}):\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

/** The core container's environment as `helm template` renders it with these `--set` values. */
export async function coreEnv(values: string[]): Promise<EnvVar[]> {
  const manifest = await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', ...values.flatMap((value) => ['--set', value])]);
  const core = parseAllDocuments(manifest)
    .map((document) => document.toJS() as { kind?: string; metadata?: { name?: string }; spec?: any } | null)
    .find((object) => object?.kind === 'Deployment' && object.metadata?.name === 'rel-uhlp-core')!;
  return core.spec.template.spec.containers[0].env as EnvVar[];
}
