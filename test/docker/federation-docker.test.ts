// MCP federation through `uhlp dev --driver docker` (the mcp-host image, packages mounted read-only): see the suite.
import { describeFederation } from '../helpers/federation-suite.js';
import { docker, testImages } from './docker-env.js';

describeFederation({
  driver: 'docker',
  before: testImages,
  // The hostile server's containers of this core: their work tree (a label) is under its data directory.
  async killServer(core) {
    const containers = await docker.listContainers({ filters: JSON.stringify({ label: ['uhlp.dev/app=fed', 'uhlp.dev/pool=hostile'] }) });
    const ours = containers.filter((container) => Object.values(container.Labels).some((value) => value.startsWith(core.dataDir)));
    await Promise.all(ours.map((container) => docker.getContainer(container.Id).kill({ signal: 'SIGKILL' }).catch(() => undefined)));
    return ours.length;
  },
});
