// Request bodies for the steps that must see them before anything goes upstream: a body over the limit is a 413,
// and a JSON or YAML body that does not parse is a 400, so a malformed request never reaches the control plane.
// Other bodies (protobuf, CBOR) are passed on byte for byte.

import { parse as parseYaml } from 'yaml';
import { newBadRequest, newRequestEntityTooLarge } from '../api/status.js';
import type { RequestContext } from '../server/context.js';

const JSON_TYPES = new Set([
  'application/json',
  'application/merge-patch+json',
  'application/json-patch+json',
  'application/strategic-merge-patch+json',
]);
const YAML_TYPES = new Set(['application/yaml', 'application/apply-patch+yaml']);

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Reads the whole body (at most limit bytes) once per request; later callers get the same buffer. */
export async function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  if (ctx.body) return ctx.body;
  const declared = Number(ctx.req.headers['content-length'] ?? -1);
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  ctx.body = Buffer.concat(chunks, size);
  return ctx.body;
}

function tooLarge(limit: number): Error {
  return newRequestEntityTooLarge(`limit is ${limit}`);
}

/** Throws 400 when a JSON or YAML body does not parse; other media types are not looked into. */
export function checkBodySyntax(contentType: string | undefined, body: Buffer): void {
  if (body.length === 0) return;
  const mt = mediaType(contentType);
  if (JSON_TYPES.has(mt)) {
    try {
      JSON.parse(body.toString('utf8'));
    } catch (e) {
      throw newBadRequest(`the request body is not valid JSON: ${(e as Error).message}`);
    }
  } else if (YAML_TYPES.has(mt)) {
    try {
      parseYaml(body.toString('utf8'));
    } catch (e) {
      throw newBadRequest(`the request body is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
    }
  }
}
