#!/usr/bin/env node
/**
 * Entry of the std-body host process:
 * `node dist/std-body/main.js --socket <path> [--secret-fd N | --secret-file <path>]`.
 * It connects to the core's spine socket (retrying until the core is up),
 * serves the shell and web routes, and exits cleanly on SIGTERM or SIGINT.
 * Logs are JSON lines on stderr.
 *
 * The core only lets it register those routes with the core's secret. The core
 * that starts it as a child hands the secret over on an inherited pipe
 * (`--secret-fd`), never on the command line; a host started on its own (`uhlp
 * start`) reads the secret file beside the socket (or `--secret-file`) on every
 * connect, so that it follows a restarted core's new secret.
 */
import { closeSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readSpineSecret, spineSecretPath } from '../spine/spine-secret.js';
import { createStdBodyHost } from './std-body-host.js';

const USAGE = 'usage: std-body --socket <path> [--secret-fd N | --secret-file <path>]\n';

function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), component: 'std-body', event, ...fields })}\n`);
}

/** The secret written to an inherited pipe by the parent, read to its end. */
function secretFromFd(raw: string): string | undefined {
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 3) return undefined;
  const fd = Number(raw);
  try {
    return readFileSync(fd, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Already closed.
    }
  }
}

function main(): void {
  let values: { socket?: string; 'secret-fd'?: string; 'secret-file'?: string } = {};
  try {
    values = parseArgs({ options: { socket: { type: 'string' }, 'secret-fd': { type: 'string' }, 'secret-file': { type: 'string' } }, strict: true }).values;
  } catch (error) {
    log('bad-arguments', { message: error instanceof Error ? error.message : String(error) });
  }
  const socketPath = values.socket;
  if (socketPath === undefined || socketPath === '' || (values['secret-fd'] !== undefined && values['secret-file'] !== undefined)) {
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  let secret: string | (() => string | undefined);
  if (values['secret-fd'] !== undefined) {
    const fromFd = secretFromFd(values['secret-fd']);
    if (fromFd === undefined) {
      log('no-secret', { secretFd: values['secret-fd'] });
      process.exitCode = 2;
      return;
    }
    secret = fromFd;
  } else {
    const file = values['secret-file'] || spineSecretPath(socketPath);
    secret = () => {
      const read = readSpineSecret(file);
      if (read === undefined) log('no-secret', { secretFile: file });
      return read;
    };
  }
  const host = createStdBodyHost({ socketPath, secret });
  host.on('connected', () => log('connected', { socketPath }));
  host.on('disconnected', () => log('disconnected', { socketPath }));
  host.on('registered', (route: string) => log('registered', { route }));
  host.on('error-message', (message: unknown) => log('core-error', { message }));
  const stop = (signal: string): void => {
    log('stopping', { signal });
    void host.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  host.start();
}

main();
