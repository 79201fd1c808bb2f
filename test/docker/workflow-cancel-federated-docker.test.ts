// A cancel cutting a federated MCP server's call through `uhlp dev --driver docker` with Redis state, the cut
// execution's container removed: see the suite.
import { describeFederatedCancel } from '../helpers/workflow-cancel-federated-suite.js';
import { docker, requireDocker } from './docker-env.js';

describeFederatedCancel({
  driver: 'docker',
  before: requireDocker,
  startTimeoutMs: 180_000,
  sandboxes: async (app) => new Set((await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`uhlp.dev/app=${app}`] }) })).map((info) => info.Id)),
});
