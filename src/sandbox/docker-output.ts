/**
 * What a Docker sandbox's runner prints: copied into the core's log as it comes
 * (script console output, crash reports), one line per entry tagged with the
 * sandbox, as the process driver does; and its last lines, read back for an exit
 * or a start that failed.
 */
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from '../logger.js';

/** Streams the container's output into the log until it stops; `since` in Unix seconds (0 = from start). */
export function forwardOutput(docker: Docker, container: Docker.Container, logger: Logger, since: number): void {
  const sandbox = container.id.slice(0, 12);
  const logLines = (stream: 'stdout' | 'stderr'): PassThrough => {
    const through = new PassThrough();
    createInterface({ input: through }).on('line', (line) => {
      // The runner's ready line is for drivers that wait on stdout; this one probes.
      if (line && !(stream === 'stdout' && line.startsWith('{"event":"ready"'))) {
        logger.info({ sandbox, stream }, line);
      }
    });
    return through;
  };
  container
    .logs({ follow: true, stdout: true, stderr: true, since })
    .then((raw) => {
      const stdout = logLines('stdout');
      const stderr = logLines('stderr');
      docker.modem.demuxStream(raw, stdout, stderr);
      raw.on('end', () => {
        stdout.end();
        stderr.end();
      });
      // Removing the container ends the stream; an error then is expected.
      raw.on('error', () => undefined);
    })
    .catch(() => undefined);
}

/** The last lines the runner wrote, for logs and start errors. */
export async function logTail(container: Docker.Container): Promise<string> {
  try {
    const raw = (await container.logs({ stdout: true, stderr: true, tail: 20, follow: false })) as unknown as Buffer;
    return demultiplex(raw).trim();
  } catch {
    return '';
  }
}

/** The line of a tail that says most: the first naming an error, else the last. */
export function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines.find((l) => /error/i.test(l)) ?? lines[lines.length - 1] ?? '').slice(0, 300);
}

/** Docker prefixes each log chunk of a non-TTY container with an 8-byte header. */
function demultiplex(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}
