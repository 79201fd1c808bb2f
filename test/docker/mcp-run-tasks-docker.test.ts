// Workflow runs as MCP tasks, driven by the official client, through `uhlp dev --driver docker` with Redis state: see the suite.
import { describeMcpRunTasks } from '../helpers/mcp-run-tasks-suite.js';
import { requireDocker } from './docker-env.js';

describeMcpRunTasks({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
