import { describe, expect, it } from 'vitest';
import {
  INITIAL_EVENTS_END_ANNOTATION,
  INITIAL_EVENTS_LIST_BLUEPRINT_ANNOTATION,
  bookmarkJson,
  encodeWatchEvent,
  errorEventFromStatus,
} from '../../src/api/watch.js';
import { tooOldResourceVersionError } from '../../src/api/resourceversion.js';

describe('watch framing', () => {
  it('frames one event per line', () => {
    const obj = '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","resourceVersion":"5"}}';
    const frame = encodeWatchEvent('ADDED', obj);
    expect(frame.toString()).toBe(`{"type":"ADDED","object":${obj}}\n`);
    expect(JSON.parse(frame.toString())).toEqual({ type: 'ADDED', object: JSON.parse(obj) });
    for (const t of ['MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'] as const) {
      expect(encodeWatchEvent(t, '{}').toString()).toBe(`{"type":"${t}","object":{}}\n`);
    }
  });

  it('drops a trailing newline from an encoder-produced object and handles multi-byte text', () => {
    expect(encodeWatchEvent('MODIFIED', '{"a":"é"}\n').toString('utf8')).toBe('{"type":"MODIFIED","object":{"a":"é"}}\n');
  });

  it('bookmarks carry only the resourceVersion (and annotations)', () => {
    expect(bookmarkJson('v1', 'Pod', '123')).toBe('{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"123"}}');
    expect(bookmarkJson('v1', 'Pod', '123', undefined, '"spec":{"containers":null},"status":{}')).toBe(
      '{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"123"},"spec":{"containers":null},"status":{}}',
    );
    const end = bookmarkJson('apps/v1', 'Deployment', '9', {
      [INITIAL_EVENTS_LIST_BLUEPRINT_ANNOTATION]: 'eyJ9',
      [INITIAL_EVENTS_END_ANNOTATION]: 'true',
    });
    expect(end).toBe(
      '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true","kubernetes.io/initial-events-list-blueprint":"eyJ9"}}}',
    );
  });

  it('an ERROR event for a too-old resourceVersion matches the apiserver bytes', () => {
    expect(errorEventFromStatus(tooOldResourceVersionError(1, 5).status).toString()).toBe(
      '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}\n',
    );
  });
});
