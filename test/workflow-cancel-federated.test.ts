// A cancel cutting a federated MCP server's call, on the process driver with Redis state: see the suite.
import { describeFederatedCancel } from './helpers/workflow-cancel-federated-suite.js';

describeFederatedCancel({ driver: 'process' });
