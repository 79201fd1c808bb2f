// A cancel cutting a federated MCP server's call through `uhlp dev --driver docker` with Redis state: see the suite.
import { describeFederatedCancel } from '../helpers/workflow-cancel-federated-suite.js';
import { requireDocker } from './docker-env.js';

describeFederatedCancel({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
