import { describe, expect, it } from 'vitest';
import { humanDuration, shortHumanDuration, translateTimestampSince } from '../../src/api/duration.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const Y = 365 * D;

// Cases from apimachinery/pkg/util/duration/duration_test.go (nanosecond offsets become milliseconds).
describe('humanDuration', () => {
  it.each([
    [S, '1s'],
    [70 * S, '70s'],
    [190 * S, '3m10s'],
    [70 * M, '70m'],
    [47 * H, '47h'],
    [49 * H, '2d1h'],
    [(8 * 24 + 2) * H, '8d'],
    [367 * D, '367d'],
    [(365 * 2 * 24 + 25) * H, '2y1d'],
    [(365 * 8 * 24 + 2) * H, '8y'],
  ])('%d ms -> %s', (ms, want) => expect(humanDuration(ms)).toBe(want));

  it.each([
    [-2 * S, '<invalid>'],
    [-2 * S + 1, '0s'],
    [0, '0s'],
    [S - 1, '0s'],
    [2 * M - 1, '119s'],
    [2 * M, '2m'],
    [2 * M + S, '2m1s'],
    [10 * M - 1, '9m59s'],
    [10 * M, '10m'],
    [10 * M + S, '10m'],
    [3 * H - 1, '179m'],
    [3 * H, '3h'],
    [3 * H + M, '3h1m'],
    [8 * H - 1, '7h59m'],
    [8 * H, '8h'],
    [8 * H + 59 * M, '8h'],
    [2 * D - 1, '47h'],
    [2 * D, '2d'],
    [2 * D + H, '2d1h'],
    [8 * D - 1, '7d23h'],
    [8 * D, '8d'],
    [8 * D + 23 * H, '8d'],
    [2 * Y - 1, '729d'],
    [2 * Y, '2y'],
    [2 * Y + 23 * H, '2y'],
    [2 * Y + 23 * H + 59 * M, '2y'],
    [2 * Y + D - 1, '2y'],
    [2 * Y + D, '2y1d'],
    [3 * Y, '3y'],
    [7 * Y, '7y'],
    [8 * Y - 1, '7y364d'],
    [8 * Y, '8y'],
    [8 * Y + 364 * D, '8y'],
    [9 * Y, '9y'],
  ])('boundary %d ms -> %s', (ms, want) => expect(humanDuration(ms)).toBe(want));
});

describe('shortHumanDuration', () => {
  it.each([
    [-2 * S, '<invalid>'],
    [-2 * S + 1, '0s'],
    [0, '0s'],
    [S - 1, '0s'],
    [S, '1s'],
    [2 * S - 1, '1s'],
    [M - 1, '59s'],
    [M, '1m'],
    [2 * M - 1, '1m'],
    [H - 1, '59m'],
    [H, '1h'],
    [2 * H - 1, '1h'],
    [D - 1, '23h'],
    [D, '1d'],
    [2 * D - 1, '1d'],
    [Y - 1, '364d'],
    [Y, '1y'],
    [2 * Y - 1, '1y'],
    [2 * Y, '2y'],
  ])('%d ms -> %s', (ms, want) => expect(shortHumanDuration(ms)).toBe(want));
});

describe('translateTimestampSince', () => {
  it('prints <unknown> for a missing timestamp and an age otherwise', () => {
    expect(translateTimestampSince(undefined)).toBe('<unknown>');
    expect(translateTimestampSince('')).toBe('<unknown>');
    const now = Date.parse('2024-01-01T01:00:00Z');
    expect(translateTimestampSince('2024-01-01T00:00:00Z', now)).toBe('60m');
    expect(translateTimestampSince('2024-01-01T00:59:30Z', now)).toBe('30s');
  });
});
