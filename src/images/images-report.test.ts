import { describe, expect, it } from 'vitest';
import { formatBuiltImages } from './images-report.js';

describe('formatBuiltImages', () => {
  it('prints each image with its size and whether it was built', () => {
    const text = formatBuiltImages({
      nodeBase: { reference: 'uhlp/node-base:0123456789abcdef', id: 'sha256:a', sizeBytes: 91_746_450, built: false },
      jitRunner: { reference: 'uhlp/jit-runner:fedcba9876543210', id: 'sha256:b', sizeBytes: 93_011_277, built: true },
      llmOrchestrator: { reference: 'uhlp/llm-orchestrator:00112233aabbccdd', id: 'sha256:c', sizeBytes: 95_500_000, built: true },
      csjsRunner: { reference: 'uhlp/csjs-runner:4455667788990011', id: 'sha256:d', sizeBytes: 118_000_000, built: true },
      mcpHost: { reference: 'uhlp/mcp-host:8899aabbccddeeff', id: 'sha256:e', sizeBytes: 92_000_000, built: true },
    });
    expect(text).toBe(
      'uhlp/node-base:0123456789abcdef  91.7 MB  up to date\nuhlp/jit-runner:fedcba9876543210  93.0 MB  built\nuhlp/llm-orchestrator:00112233aabbccdd  95.5 MB  built\nuhlp/csjs-runner:4455667788990011  118.0 MB  built\nuhlp/mcp-host:8899aabbccddeeff  92.0 MB  built',
    );
  });
});
