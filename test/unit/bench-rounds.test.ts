// The rounds' notes (test/bench/rounds.ts) go into a full run's result once, before the history of earlier rounds,
// and `npm run bench -- --render` puts them in again as the file says them then, taking out what a run put in.

import { describe, expect, it } from 'vitest';
import type { ScenarioResult } from '../bench/lib.js';
import { withRoundNotes } from '../bench/rounds.js';

const own = 'one member with 50000 generated pods';
const history = 'in the eighth round of 2026-11-28 a long response writes for at most 0.25 ms a turn';
const result = (notes: string[], roundNotes?: string[]): ScenarioResult => ({ id: 7, title: 'Fairness', goal: '', figures: {}, met: false, notes, roundNotes });

describe('withRoundNotes', () => {
  it('puts the rounds notes after the scenario own notes and before its history, and records them', () => {
    const r = withRoundNotes(result([own, history]));
    expect(r.roundNotes!.length).toBeGreaterThan(0);
    expect(r.notes).toEqual([own, ...r.roundNotes!, history]);
  });

  it('says them once however often it is applied', () => {
    const once = withRoundNotes(result([own, history]));
    expect(withRoundNotes(once).notes).toEqual(once.notes);
  });

  it('replaces the notes a run put in with what the file says now', () => {
    const stale = 'the run published on some day, as the file said it then';
    const r = withRoundNotes(result([own, stale, history], [stale]));
    expect(r.notes).not.toContain(stale);
    expect(r.notes).toEqual([own, ...r.roundNotes!, history]);
  });

  it('takes, in a result published before roundNotes was recorded, the notes the file says as its rounds notes', () => {
    const current = withRoundNotes(result([own, history]));
    const legacy = result(current.notes);
    expect(withRoundNotes(legacy).notes).toEqual(current.notes);
  });

  it('leaves a scenario with no rounds notes as it is', () => {
    const r = withRoundNotes({ ...result([own]), id: 99 });
    expect(r.notes).toEqual([own]);
    expect(r.roundNotes).toEqual([]);
  });
});
