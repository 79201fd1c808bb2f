/**
 * A real Git server over https on loopback for tests: Git's own `git http-backend`
 * (smart HTTP, protocol v2 included) behind a Node https server, with a
 * self-signed certificate made by openssl at test time for `localhost`,
 * `git.test`, 127.0.0.1 and ::1. The certificate file doubles as the CA file a
 * client trusts (`UHLP_GIT_CA_FILE`, `http.sslCAInfo`).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface HttpsGitServer {
  /** `https://127.0.0.1:<port>` */
  readonly origin: string;
  readonly port: number;
  /** The server's self-signed certificate: the CA file clients trust. */
  readonly caFile: string;
  /** Every request as `<Host header> <method> <path>`, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export interface HttpsGitServerOptions {
  /** The directory whose repositories are served (`GIT_PROJECT_ROOT`); `/<name>` serves `<root>/<name>`. */
  readonly root: string;
  /** Answer every request with a 302 to this origin instead of serving it. */
  readonly redirectTo?: string;
  /** IPv4 address to listen on (also named by the certificate), e.g. a cluster node's bridge address. @defaultValue 127.0.0.1 */
  readonly host?: string;
}

/** A self-signed certificate and key in a fresh temp directory. */
export function makeCertificate(extraIp?: string): { certFile: string; keyFile: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-tls-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=uhlp test git server',
      '-addext', `subjectAltName=DNS:localhost,DNS:git.test,IP:127.0.0.1,IP:::1${extraIp ? `,IP:${extraIp}` : ''}`,
      '-keyout', keyFile, '-out', certFile,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return { certFile, keyFile };
}

export async function startHttpsGitServer(options: HttpsGitServerOptions): Promise<HttpsGitServer> {
  const host = options.host ?? '127.0.0.1';
  const { certFile, keyFile } = makeCertificate(host === '127.0.0.1' ? undefined : host);
  const requests: string[] = [];
  const server = https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://placeholder');
    requests.push(`${req.headers.host ?? ''} ${req.method ?? ''} ${url.pathname}`);
    if (options.redirectTo !== undefined) {
      res.writeHead(302, { location: `${options.redirectTo}${url.pathname}${url.search}` }).end();
      return;
    }
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: options.root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      REMOTE_ADDR: req.socket.remoteAddress ?? '',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
    };
    if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    cgi.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    cgi.on('error', () => res.writeHead(500).end());
    cgi.on('close', () => {
      // A CGI answer: header lines, a blank line, the body.
      const all = Buffer.concat(out);
      const crlf = all.indexOf('\r\n\r\n');
      const lf = all.indexOf('\n\n');
      const end = crlf !== -1 && (lf === -1 || crlf < lf) ? crlf + 4 : lf + 2;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of all.subarray(0, end).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers).end(all.subarray(end));
    });
    req.pipe(cgi.stdin);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://${host}:${port}`,
    port,
    caFile: certFile,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
