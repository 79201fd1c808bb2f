import { silentLogger } from '../../src/logger.js';
import { ProcessDriver } from '../../src/sandbox/process-driver.js';
import { describeSandboxDriver } from './driver-suite.js';

describeSandboxDriver('process', {
  makeDriver: () => new ProcessDriver({ logger: silentLogger() }),
  memoryExhaustionCause: 'heap-limit',
});
