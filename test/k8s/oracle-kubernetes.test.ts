/**
 * The optimization oracle with an app that exists only as an AppDefinition
 * resource (`--registry kubernetes`), its files in a Git source on a real https
 * Git server: the component is sampled and its candidate judged as anywhere,
 * but the promotion is refused with the reason (the core does not write the
 * resource and holds no push access to the source), and nothing served changes.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from '../helpers/openai-test-server.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { FAST_LEASE, collectingLogger } from './fixtures.js';
import { createNamespace, installCrds, kubeconfigPath, loadKubeConfig, removeApps, waitFor } from './kube-env.js';

const MODULE = 'export default async function (event) { return { shout: event.body.text.toUpperCase() }; }';

describe('the optimization oracle with apps from Kubernetes', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  let core: UhlpProcess;
  let gitServer: HttpsGitServer;
  let llm: OpenAiTestServer;
  let sourceUrl: string;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-oracle');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger: collectingLogger() });
    const served = mkdtempSync(path.join(os.tmpdir(), 'uhlp-git-served-'));
    const repo = path.join(served, 'work');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, {
      'apps/loud/prompts/shout.njk': 'Shout: {{ body.text }}\n',
      'apps/loud/schemas/shout.json': JSON.stringify({ type: 'object', properties: { shout: { type: 'string' } }, required: ['shout'], additionalProperties: false }),
    });
    commitAll(repo, 'loud app files');
    git(served, 'clone', '-q', '--bare', repo, path.join(served, 'apps.git'));
    gitServer = await startHttpsGitServer({ root: served });
    sourceUrl = `${gitServer.origin}/apps.git`;
    llm = await startOpenAiTestServer();
    llm.handle((request) => {
      const messages = request.body.messages ?? [];
      if (String(messages[0]?.['content'] ?? '').startsWith('uhlp-oracle-codegen')) return reply.text(`\`\`\`js\n${MODULE}\n\`\`\``);
      const text = /Shout: (.*)$/m.exec(String(messages.at(-1)?.['content'] ?? ''))![1]!;
      return reply.text(JSON.stringify({ shout: text.toUpperCase() }));
    });
    core = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace.name], 60_000, undefined, {
      KUBECONFIG: kubeconfigPath(),
      UHLP_GIT_ALLOW_PRIVATE: `127.0.0.1:${gitServer.port}`,
      UHLP_GIT_CA_FILE: gitServer.caFile,
      UHLP_LLM_BASE_URL: llm.baseUrl,
      UHLP_ORACLE_INTERVAL_MS: '100',
    });
  }, 120_000);

  afterAll(async () => {
    await core?.stop();
    await llm?.close();
    await gitServer?.close();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
  });

  it('judges the candidate, refuses its promotion with the reason, and keeps serving the LLM', async () => {
    await client.create(APP_DEFINITION, {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'loud', namespace: namespace.name },
      spec: {
        ingress: { pathPrefix: '/k8s-loud' },
        source: { git: { url: sourceUrl } },
        pools: [
          { name: 'brain', runner: 'llm', minWarm: 1 },
          { name: 'code', runner: 'jit', minWarm: 1 },
        ],
        components: [
          {
            id: 'shout',
            handler: 'LLM',
            pool: 'brain',
            llm: {
              prompt: 'prompts/shout.njk',
              outputSchema: 'schemas/shout.json',
              temperature: 0,
              optimize: { mode: 'auto', minSamples: 12, minRepeats: 1, minRequestsPerMinute: 0, holdout: 0.5, maxAttempts: 1 },
            },
          },
        ],
        routes: [{ http: { method: 'POST', path: '/shout' }, component: 'shout' }],
        capabilities: { llm: { models: ['small'], maxTokens: 64 } },
      },
    } as unknown as AppDefinitionResource);
    const ask = async (text: string): Promise<{ status: number; json: unknown }> => {
      const response = await fetch(`${core.url}/k8s-loud/shout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
      return { status: response.status, json: await response.json().catch(() => undefined) };
    };
    await waitFor('loud served', async () => (await ask('hello')).status === 200, 60_000);

    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliett', 'kilo', 'lima', 'mike', 'november', 'oscar', 'papa', 'alpha'];
    for (const word of words) expect(await ask(word)).toEqual({ status: 200, json: { shout: word.toUpperCase() } });

    const refused = await waitFor(
      'the promotion refused',
      async () => {
        const answer = (await (await fetch(`${core.operatorUrl}/_uhlp/oracle/status?app=loud&component=shout`)).json()) as { components: Array<Record<string, any>> };
        const status = answer.components[0]!;
        return status['stage'] === 'refused' ? status : undefined;
      },
      60_000,
    );
    expect(refused['candidates']).toEqual([expect.objectContaining({ verdict: 'passed', agreement: 1 })]);
    expect(refused['reason']).toMatch(/comes from a Kubernetes AppDefinition/);
    expect(refused['reason']).toContain(refused['candidate'].script);
    expect(refused['handler']).toBe('LLM');
    const calls = llm.requests.length;
    expect(await ask('still the model')).toEqual({ status: 200, json: { shout: 'STILL THE MODEL' } });
    expect(llm.requests.length).toBe(calls + 1);

    // An operator's promote is refused the same way, with its code.
    const promote = await fetch(`${core.operatorUrl}/_uhlp/oracle/promote`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ app: 'loud', component: 'shout' }) });
    expect(promote.status).toBe(409);
    expect(await promote.json()).toMatchObject({ code: 'UHLP_ORACLE_PROMOTION_REFUSED' });
  }, 180_000);
});
