// LLM components through `uhlp dev --driver docker`, against an OpenAI-compatible server: see the suite.
import { describeLlmComponents } from '../helpers/llm-components-suite.js';
import { requireDocker } from './docker-env.js';

describeLlmComponents({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
