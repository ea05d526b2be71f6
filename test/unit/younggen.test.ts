import { describe, expect, it } from 'vitest';
import { youngGeneration } from '../../src/cache/younggen.js';

describe('youngGeneration', () => {
  it("is V8's own when node was given no size", () => {
    expect(youngGeneration([], undefined)).toEqual({ semiSpaceMB: undefined, source: 'v8' });
    expect(youngGeneration(['--expose-gc'], '--max-old-space-size=2048')).toEqual({ semiSpaceMB: undefined, source: 'v8' });
  });

  it('reads NODE_OPTIONS, as the chart and the image set it', () => {
    expect(youngGeneration([], '--max-old-space-size=2048 --max-semi-space-size=64')).toEqual({ semiSpaceMB: 64, source: 'NODE_OPTIONS' });
    expect(youngGeneration([], '--max_semi_space_size 32')).toEqual({ semiSpaceMB: 32, source: 'NODE_OPTIONS' });
  });

  it('lets the command line win over NODE_OPTIONS, and the last of several win', () => {
    expect(youngGeneration(['--max-semi-space-size=128'], '--max-semi-space-size=64')).toEqual({ semiSpaceMB: 128, source: 'command line' });
    expect(youngGeneration(['--max-semi-space-size=16', '--max-semi-space-size=32'], undefined)).toEqual({ semiSpaceMB: 32, source: 'command line' });
  });

  it("takes 0 as V8's own choice, and ignores values that are not sizes", () => {
    expect(youngGeneration(['--max-semi-space-size=0'], '--max-semi-space-size=64')).toEqual({ semiSpaceMB: undefined, source: 'command line' });
    expect(youngGeneration(['--max-semi-space-size=lots'], undefined)).toEqual({ semiSpaceMB: undefined, source: 'v8' });
    expect(youngGeneration(['--max-semi-space-size-extra=64'], undefined)).toEqual({ semiSpaceMB: undefined, source: 'v8' });
  });
});
