/**
 * `uhlp dev --driver docker` with an LLM component: the pool's `runner: llm`
 * starts the uhlp/llm-orchestrator image, in a container with no network and
 * no definitions mount, that reads the templates and asks the model through
 * the core's mounted MCP socket (the scripted provider answers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ANSWER, llmFixture, TRIAGE_ANSWER, TRIAGE_REQUEST } from '../helpers/llm-fixture.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { docker, requireDocker } from './docker-env.js';

let core: UhlpProcess;

beforeAll(async () => {
  await requireDocker();
  const { dir, env } = llmFixture();
  core = await startUhlpDev(dir, ['--driver', 'docker'], 180_000, undefined, env);
}, 200_000);
afterAll(async () => {
  await core?.stop();
});

describe('an LLM component on the Docker driver', () => {
  it('runs in an llm-orchestrator container without network or definitions, and answers the model', async () => {
    const response = await fetch(`${core.url}/h/tickets/42?lang=en`, TRIAGE_REQUEST);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: TRIAGE_ANSWER });
    const containers = await docker.listContainers({ filters: JSON.stringify({ label: ['uhlp.dev/app=helpdesk'] }) });
    expect(containers.length).toBeGreaterThan(0);
    for (const info of containers) {
      const inspected = await docker.getContainer(info.Id).inspect();
      expect(inspected.Config.Image).toBe('uhlp/llm-orchestrator:latest');
      expect(inspected.HostConfig.NetworkMode).toBe('none');
      // /dev/shm and /dev/mqueue are read-only tmpfs mounts: the tree is the one writable place.
      expect(inspected.Mounts.map((mount) => mount.Destination).sort()).toEqual(['/dev/mqueue', '/dev/shm', '/run/uhlp', '/run/uhlp-core/mcp.sock', '/work']);
      expect(inspected.Mounts.filter((mount) => mount.Destination.startsWith('/dev/')).every((mount) => mount.RW === false)).toBe(true);
      expect(inspected.Config.Entrypoint).toContain('/app/dist/runners/llm-orchestrator/main.js');
    }
  });

  it('answers template errors and keeps serving', async () => {
    const broken = await fetch(`${core.url}/h/broken`);
    expect(broken.status).toBe(500);
    expect(await broken.json()).toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_ERROR', details: { file: 'prompts/broken.njk', line: 2 } });
    const other = await fetch(`${core.url}/h/tickets/7`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(await other.json()).toEqual({ text: DEFAULT_ANSWER });
  });
});
