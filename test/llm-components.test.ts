// LLM components through `uhlp dev` on the process driver, against an OpenAI-compatible server: see the suite.
import { describeLlmComponents } from './helpers/llm-components-suite.js';

describeLlmComponents({ driver: 'process' });
