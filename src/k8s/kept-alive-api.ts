/**
 * JSON requests to the API server over kept-alive connections, for the few calls on a
 * request's path (the pod driver's claim). The client library makes a new
 * https.Agent for every call, so each one opens a new TCP connection and does a TLS
 * handshake (with a client certificate) before its request: most of a claim's time
 * on a busy machine. Credentials are read from the kube config on every request, as
 * the library does (a service-account token file is rotated); the TLS material is
 * read once, for the agent.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface ApiAnswer {
  readonly status: number;
  /** The parsed JSON body; undefined when it is not JSON. */
  readonly body: unknown;
}

interface HttpsOptions extends https.RequestOptions {
  auth?: string;
  headers?: Record<string, string>;
}

export class KeptAliveApi {
  private agent: http.Agent | undefined;
  private readonly server: URL;

  constructor(private readonly kubeConfig: KubeConfig) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kube config names no current cluster');
    this.server = new URL(cluster.server);
  }

  /** Sends `body` (JSON) with `contentType` to `path` (under the server's URL), and answers the status and parsed body. */
  async request(method: string, path: string, body: unknown, contentType = 'application/json'): Promise<ApiAnswer> {
    const options: HttpsOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options);
    const secure = this.server.protocol === 'https:';
    this.agent ??= secure
      ? new https.Agent({
          keepAlive: true,
          maxSockets: 8,
          ...(options.ca !== undefined ? { ca: options.ca } : {}),
          ...(options.cert !== undefined ? { cert: options.cert } : {}),
          ...(options.key !== undefined ? { key: options.key } : {}),
          ...(options.rejectUnauthorized !== undefined ? { rejectUnauthorized: options.rejectUnauthorized } : {}),
          ...(options.servername !== undefined ? { servername: options.servername } : {}),
        })
      : new http.Agent({ keepAlive: true, maxSockets: 8 });
    const payload = Buffer.from(JSON.stringify(body));
    const headers: Record<string, string | number> = {
      ...options.headers,
      'content-type': contentType,
      'content-length': payload.length,
      accept: 'application/json',
    };
    if (options.auth) headers['authorization'] = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const base = this.server.pathname.replace(/\/$/, '');
    return new Promise<ApiAnswer>((resolve, reject) => {
      const request = (secure ? https : http).request(
        { protocol: this.server.protocol, hostname: this.server.hostname, port: this.server.port, path: `${base}${path}`, method, headers, agent: this.agent },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              parsed = undefined;
            }
            resolve({ status: response.statusCode ?? 0, body: parsed });
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.setTimeout(30_000, () => request.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      request.end(payload);
    });
  }

  close(): void {
    this.agent?.destroy();
  }
}
