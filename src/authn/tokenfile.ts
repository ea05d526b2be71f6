// Static bearer tokens in kube-apiserver's --token-auth-file format (k8s.io/apiserver/pkg/authentication/token/
// tokenfile): CSV records `token,user,uid[,"group1,group2"]`, read once at startup. Go's encoding/csv rules apply
// (quoted fields, "" escapes, blank lines skipped, a bare quote in an unquoted field is an error), so a file that
// kube-apiserver accepts is accepted here and one it rejects is rejected with the same kind of message.

import { readFile } from 'node:fs/promises';
import type { UserInfo } from '../api/user.js';

export interface TokenFileWarning {
  record: number;
  message: string;
}

export interface TokenTable {
  tokens: Map<string, UserInfo>;
  /** What kube-apiserver logs as warnings (empty or duplicate tokens); the caller decides where they go. */
  warnings: TokenFileWarning[];
}

export async function loadTokenFile(path: string): Promise<TokenTable> {
  const text = await readFile(path, 'utf8');
  return parseTokenFile(text, path);
}

/** tokenfile.NewCSV over the file's text. */
export function parseTokenFile(text: string, path: string): TokenTable {
  const tokens = new Map<string, UserInfo>();
  const warnings: TokenFileWarning[] = [];
  let recordNum = 0;
  for (const record of parseCsv(text)) {
    if (record.length < 3) {
      throw new Error(
        `token file '${path}' must have at least 3 columns (token, user name, user uid), found ${record.length}`,
      );
    }
    recordNum++;
    const [token, name, uid] = record as [string, string, string];
    if (token === '') {
      warnings.push({ record: recordNum, message: `empty token has been found in token file '${path}', record number '${recordNum}'` });
      continue;
    }
    if (tokens.has(token)) {
      warnings.push({ record: recordNum, message: `duplicate token has been found in token file '${path}', record number '${recordNum}'` });
    }
    const user: UserInfo = { username: name, groups: [] };
    if (uid !== '') user.uid = uid;
    // strings.Split: an empty fourth column is one empty group name, as upstream.
    if (record.length >= 4) user.groups = record[3]!.split(',');
    tokens.set(token, user);
  }
  return { tokens, warnings };
}

/**
 * encoding/csv.Reader with FieldsPerRecord = -1, no comments, no LazyQuotes. Errors carry Go's wording
 * ("parse error on line L, column C: ...") so a broken file reads the same as in kube-apiserver's log.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  const n = text.length;
  let i = 0;
  let line = 1;
  while (i < n) {
    // Blank lines (also "\r\n") are skipped, not empty records.
    if (text[i] === '\n') {
      i++;
      line++;
      continue;
    }
    if (text[i] === '\r' && text[i + 1] === '\n') {
      i += 2;
      line++;
      continue;
    }
    const recordLine = line;
    const fields: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        const startLine = line;
        let col = 1;
        i++;
        for (;;) {
          if (i >= n) throw csvError(startLine, line, col, 'extraneous or missing " in quoted-field');
          const c = text[i]!;
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n') line++;
          // encoding/csv turns \r\n inside a quoted field into \n.
          if (c === '\r' && text[i + 1] === '\n') {
            i++;
            continue;
          }
          field += c;
          i++;
          col++;
        }
        if (i < n && text[i] !== ',' && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n') && text[i] !== '\r') {
          throw csvError(recordLine, line, col + 1, 'extraneous or missing " in quoted-field');
        }
      } else {
        const start = i;
        while (i < n && text[i] !== ',' && text[i] !== '\n' && !(text[i] === '\r' && (text[i + 1] === '\n' || i + 1 === n))) {
          if (text[i] === '"') throw csvError(recordLine, line, i - lineStart(text, i) + 1, 'bare " in non-quoted-field');
          i++;
        }
        field = text.slice(start, i);
      }
      fields.push(field);
      if (i < n && text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') {
      i++;
      line++;
    }
    records.push(fields);
  }
  return records;
}

function lineStart(text: string, i: number): number {
  const nl = text.lastIndexOf('\n', i - 1);
  return nl + 1;
}

function csvError(startLine: number, line: number, column: number, err: string): Error {
  const where = startLine !== line ? `record on line ${startLine}; parse error on line ${line}, column ${column}` : `parse error on line ${line}, column ${column}`;
  return new Error(`${where}: ${err}`);
}
