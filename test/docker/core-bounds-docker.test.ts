// What the core takes from sandboxes, through `uhlp dev --driver docker` (see the suite).
import { describeCoreBounds } from '../helpers/core-bounds-suite.js';
import { requireDocker } from './docker-env.js';

describeCoreBounds({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
