// Workflow runs as MCP tasks, driven by the official client, on the process driver with Redis state: see the suite.
import { describeMcpRunTasks } from '../helpers/mcp-run-tasks-suite.js';

describeMcpRunTasks({ driver: 'process' });
