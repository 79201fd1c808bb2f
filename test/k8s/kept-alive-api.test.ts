/**
 * The pod driver's claim goes through KeptAliveApi: a merge patch carrying a
 * resourceVersion, against the real API server. It must answer what the server
 * says (200 with the object, 409 for a stale resourceVersion, 404), and keep one
 * connection for consecutive requests instead of a TLS handshake per call.
 */
import tls from 'node:tls';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeptAliveApi } from '../../src/k8s/kept-alive-api.js';
import { createNamespace, loadKubeConfig } from './kube-env.js';

describe('KeptAliveApi against the real API server', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let api: KeptAliveApi;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    namespace = await createNamespace(kubeConfig, 'uhlp-kept-alive');
    api = new KeptAliveApi(kubeConfig);
  });
  afterAll(async () => {
    api?.close();
    await namespace?.remove();
  });

  it('patches with a resourceVersion as compare-and-swap, over one kept-alive connection', async () => {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const created = await core.createNamespacedConfigMap({ namespace: namespace.name, body: { metadata: { name: 'claim-me' }, data: { state: 'warm' } } });
    const path = `/api/v1/namespaces/${namespace.name}/configmaps/claim-me`;
    const handshakes: unknown[] = [];
    const count = (socket: unknown): void => void handshakes.push(socket);
    const original = tls.connect;
    (tls as { connect: typeof tls.connect }).connect = ((...args: Parameters<typeof tls.connect>) => {
      const socket = original(...args);
      count(socket);
      return socket;
    }) as typeof tls.connect;
    try {
      const claimed = await api.request('PATCH', path, { metadata: { resourceVersion: created.metadata!.resourceVersion }, data: { state: 'claimed' } }, 'application/merge-patch+json');
      expect(claimed.status).toBe(200);
      expect(claimed.body).toMatchObject({ metadata: { name: 'claim-me' }, data: { state: 'claimed' } });
      // The same resourceVersion again: someone (we) changed it first.
      const stale = await api.request('PATCH', path, { metadata: { resourceVersion: created.metadata!.resourceVersion }, data: { state: 'other' } }, 'application/merge-patch+json');
      expect(stale.status).toBe(409);
      const missing = await api.request('PATCH', `${path}-gone`, { data: {} }, 'application/merge-patch+json');
      expect(missing.status).toBe(404);
    } finally {
      (tls as { connect: typeof tls.connect }).connect = original;
    }
    // Three requests, one TLS connection (the API server of scripts/k8s-env.sh is https).
    expect(handshakes).toHaveLength(1);
  });
});
