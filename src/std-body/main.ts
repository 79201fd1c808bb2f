#!/usr/bin/env node
/**
 * Entry of the std-body host process: `node dist/std-body/main.js --socket <path>`.
 * It connects to the core's spine socket (retrying until the core is up),
 * serves the shell and web routes, and exits cleanly on SIGTERM or SIGINT.
 * Logs are JSON lines on stderr.
 */
import { parseArgs } from 'node:util';
import { createStdBodyHost } from './std-body-host.js';

function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), component: 'std-body', event, ...fields })}\n`);
}

function main(): void {
  let socketPath: string | undefined;
  try {
    const { values } = parseArgs({ options: { socket: { type: 'string' } }, strict: true });
    socketPath = values.socket;
  } catch (error) {
    log('bad-arguments', { message: error instanceof Error ? error.message : String(error) });
  }
  if (socketPath === undefined || socketPath === '') {
    process.stderr.write('usage: std-body --socket <path>\n');
    process.exitCode = 2;
    return;
  }
  const host = createStdBodyHost({ socketPath });
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
