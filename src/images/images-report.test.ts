import { describe, expect, it } from 'vitest';
import { formatBuiltImages } from './images-report.js';

describe('formatBuiltImages', () => {
  it('says why the python images were not built on a machine without python3', () => {
    const text = formatBuiltImages({
      nodeBase: { reference: 'uhlp/node-base:0123456789abcdef', id: 'sha256:a', sizeBytes: 91_746_450, built: false },
      jitRunner: { reference: 'uhlp/jit-runner:fedcba9876543210', id: 'sha256:b', sizeBytes: 93_011_277, built: false },
      llmOrchestrator: { reference: 'uhlp/llm-orchestrator:00112233aabbccdd', id: 'sha256:c', sizeBytes: 95_500_000, built: false },
      csjsRunner: { reference: 'uhlp/csjs-runner:4455667788990011', id: 'sha256:d', sizeBytes: 118_000_000, built: false },
      mcpHost: { reference: 'uhlp/mcp-host:8899aabbccddeeff', id: 'sha256:g', sizeBytes: 92_000_000, built: false },
      pythonSkipped: 'no Python at /usr/bin/python3',
    });
    expect(text.split('\n').at(-1)).toBe('uhlp/python-runner  not built: no Python at /usr/bin/python3');
  });

  it('prints each image with its size and whether it was built', () => {
    const text = formatBuiltImages({
      nodeBase: { reference: 'uhlp/node-base:0123456789abcdef', id: 'sha256:a', sizeBytes: 91_746_450, built: false },
      jitRunner: { reference: 'uhlp/jit-runner:fedcba9876543210', id: 'sha256:b', sizeBytes: 93_011_277, built: true },
      llmOrchestrator: { reference: 'uhlp/llm-orchestrator:00112233aabbccdd', id: 'sha256:c', sizeBytes: 95_500_000, built: true },
      csjsRunner: { reference: 'uhlp/csjs-runner:4455667788990011', id: 'sha256:d', sizeBytes: 118_000_000, built: true },
      mcpHost: { reference: 'uhlp/mcp-host:8899aabbccddeeff', id: 'sha256:g', sizeBytes: 92_000_000, built: true },
      pythonBase: { reference: 'uhlp/python-base:5566778899aabbcc', id: 'sha256:e', sizeBytes: 41_200_000, built: false },
      pythonRunner: { reference: 'uhlp/python-runner:66778899aabbccdd', id: 'sha256:f', sizeBytes: 41_300_000, built: true },
    });
    expect(text).toBe(
      'uhlp/node-base:0123456789abcdef  91.7 MB  up to date\nuhlp/jit-runner:fedcba9876543210  93.0 MB  built\nuhlp/llm-orchestrator:00112233aabbccdd  95.5 MB  built\nuhlp/csjs-runner:4455667788990011  118.0 MB  built\nuhlp/mcp-host:8899aabbccddeeff  92.0 MB  built\nuhlp/python-base:5566778899aabbcc  41.2 MB  up to date\nuhlp/python-runner:66778899aabbccdd  41.3 MB  built',
    );
  });
});
