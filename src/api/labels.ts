// Label selectors exactly as k8s.io/apimachinery/pkg/labels parses, validates, matches and prints them. The parse
// error text is what a kube-apiserver answers (as a 400) for a bad ?labelSelector=, so it is kept byte for byte.

import {
  aggregateMessages,
  fieldInvalid,
  fieldNotSupported,
  formatFieldError,
  goQuote,
  newBadRequest,
  type FieldError,
  type StatusError,
} from './status.js';
import { isQualifiedName, isValidLabelValue } from './meta.js';

export type Operator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

export interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export interface LabelSelector {
  readonly requirements: readonly Requirement[];
  readonly empty: boolean;
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** key=value pairs every match must carry, for index lookups */
  equalities(): Array<[string, string]>;
  toString(): string;
}

/** A selector that failed to parse or validate; the message is apimachinery's. */
export class LabelSelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabelSelectorError';
  }
}

/** The operators NewRequirement accepts, in selection's order (used in its error text). */
const BINARY_OPERATORS = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'];
const VALID_OPERATORS = [...BINARY_OPERATORS, 'exists', '!'];

// ---------------------------------------------------------------------------------------------------------------
// Requirements

function hasValue(r: Requirement, v: string): boolean {
  const vs = r.values;
  for (let i = 0; i < vs.length; i++) if (vs[i] === v) return true;
  return false;
}

// strconv.ParseInt(s, 10, 64) succeeds: optional sign, decimal digits, within int64.
const INT_RE = /^[+-]?[0-9]+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
function parseInt64(s: string): bigint | undefined {
  if (!INT_RE.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

function requirementMatches(r: Requirement, labels: Readonly<Record<string, string>> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return has && hasValue(r, labels![r.key]!);
    case 'notin':
    case '!=':
      return !has || !hasValue(r, labels![r.key]!);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has) return false;
      const lv = parseInt64(labels![r.key]!);
      if (lv === undefined || r.values.length !== 1) return false;
      const rv = parseInt64(r.values[0]!);
      if (rv === undefined) return false;
      return r.operator === 'gt' ? lv > rv : lv < rv;
    }
  }
}

/** Requirement.String(): values of set operators are printed sorted, without mutating the requirement. */
function requirementString(r: Requirement): string {
  let s = r.operator === '!' ? '!' + r.key : r.key;
  switch (r.operator) {
    case 'exists':
    case '!':
      return s;
    case '=':
      s += '=';
      break;
    case '==':
      s += '==';
      break;
    case '!=':
      s += '!=';
      break;
    case 'in':
      s += ' in ';
      break;
    case 'notin':
      s += ' notin ';
      break;
    case 'gt':
      s += '>';
      break;
    case 'lt':
      s += '<';
      break;
  }
  const set = r.operator === 'in' || r.operator === 'notin';
  if (set) s += '(';
  s += r.values.length === 1 ? r.values[0] : [...r.values].sort(goStringCompare).join(',');
  if (set) s += ')';
  return s;
}

/** Go compares strings bytewise; for the ASCII label alphabet this is code-unit order. */
function goStringCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Field paths as field.Path prints them. Selectors parsed from a query string carry a nil path, which Go prints as
 * "<nil>" for the key check and as a bare child ("values[0][k]") for value checks.
 */
const NIL_PATH = '<nil>';

function validateLabelKey(key: string, path: string): FieldError | undefined {
  const errs = isQualifiedName(key);
  return errs.length ? fieldInvalid(path, key, errs.join('; ')) : undefined;
}

function validateLabelValue(key: string, value: string, path: string): FieldError | undefined {
  const errs = isValidLabelValue(value);
  return errs.length ? fieldInvalid(`${path}[${key}]`, value, errs.join('; ')) : undefined;
}

/**
 * labels.NewRequirement: validates key, operator arity and values; throws with the aggregated field errors. `path`
 * is the field path prefix ('' for none, as when called without a path option).
 */
export function newRequirement(key: string, operator: string, values: string[], path = ''): Requirement {
  const child = (name: string) => (path === '' ? name : `${path}.${name}`);
  const errs: FieldError[] = [];
  const keyErr = validateLabelKey(key, child('key'));
  if (keyErr) errs.push(keyErr);
  const valuePath = child('values');
  switch (operator) {
    case 'in':
    case 'notin':
      if (values.length === 0) errs.push(fieldInvalid(valuePath, values, "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case '=':
    case '==':
    case '!=':
      if (values.length !== 1) errs.push(fieldInvalid(valuePath, values, 'exact-match compatibility requires one single value'));
      break;
    case 'exists':
    case '!':
      if (values.length !== 0) errs.push(fieldInvalid(valuePath, values, 'values set must be empty for exists and does not exist'));
      break;
    case 'gt':
    case 'lt':
      if (values.length !== 1) errs.push(fieldInvalid(valuePath, values, "for 'Gt', 'Lt' operators, exactly one value is required"));
      for (let i = 0; i < values.length; i++) {
        if (parseInt64(values[i]!) === undefined) {
          errs.push(fieldInvalid(`${valuePath}[${i}]`, values[i], "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
      break;
    default:
      errs.push(fieldNotSupported(child('operator'), operator, VALID_OPERATORS));
  }
  for (let i = 0; i < values.length; i++) {
    const e = validateLabelValue(key, values[i]!, `${valuePath}[${i}]`);
    if (e) errs.push(e);
  }
  if (errs.length > 0) throw new LabelSelectorError(aggregateMessages(errs.map(formatFieldError)));
  return { key, operator: operator as Operator, values };
}

// ---------------------------------------------------------------------------------------------------------------
// Selectors

class InternalSelector implements LabelSelector {
  readonly empty: boolean;
  constructor(readonly requirements: readonly Requirement[]) {
    this.empty = requirements.length === 0;
  }
  matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    const rs = this.requirements;
    for (let i = 0; i < rs.length; i++) if (!requirementMatches(rs[i]!, labels)) return false;
    return true;
  }
  equalities(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const r of this.requirements) {
      if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1) {
        out.push([r.key, r.values[0]!]);
      }
    }
    return out;
  }
  /** RequiresExactMatch: only the first requirement on the key counts, as in Go. */
  requiresExactMatch(key: string): string | undefined {
    for (const r of this.requirements) {
      if (r.key !== key) continue;
      if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1) return r.values[0];
      return undefined;
    }
    return undefined;
  }
  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }
}

class NothingSelector implements LabelSelector {
  readonly requirements: readonly Requirement[] = [];
  readonly empty = false;
  matches(): boolean {
    return false;
  }
  equalities(): Array<[string, string]> {
    return [];
  }
  toString(): string {
    return '';
  }
}

const EVERYTHING: LabelSelector = new InternalSelector([]);
const NOTHING: LabelSelector = new NothingSelector();

export function everything(): LabelSelector {
  return EVERYTHING;
}

export function nothing(): LabelSelector {
  return NOTHING;
}

/** Requirements sorted by key, stably (Go's sort of short slices is insertion sort). */
function selectorOf(reqs: Requirement[]): LabelSelector {
  if (reqs.length === 0) return EVERYTHING;
  reqs.sort((a, b) => goStringCompare(a.key, b.key));
  return new InternalSelector(reqs);
}

/** labels.SelectorFromSet: equality requirements, no validation. */
export function selectorFromSet(set: Readonly<Record<string, string>> | undefined): LabelSelector {
  if (!set) return EVERYTHING;
  return selectorOf(Object.keys(set).map((k) => ({ key: k, operator: '=', values: [set[k]!] })));
}

// ---------------------------------------------------------------------------------------------------------------
// Lexer and parser (selector.go), token for token.

const enum Tok {
  Error,
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
}

const STRING_TO_TOKEN: Record<string, Tok> = {
  ')': Tok.ClosedPar,
  ',': Tok.Comma,
  '!': Tok.DoesNotExist,
  '==': Tok.DoubleEquals,
  '=': Tok.Equals,
  '>': Tok.GreaterThan,
  in: Tok.In,
  '<': Tok.LessThan,
  '!=': Tok.NotEquals,
  notin: Tok.NotIn,
  '(': Tok.OpenPar,
};

function tokenOf(s: string): Tok | undefined {
  return Object.prototype.hasOwnProperty.call(STRING_TO_TOKEN, s) ? STRING_TO_TOKEN[s] : undefined;
}

function isWhitespace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}

function isSpecialSymbol(ch: string): boolean {
  switch (ch) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
      return true;
  }
  return false;
}

interface Item {
  tok: Tok;
  lit: string;
}

/** The Go lexer reads a NUL byte the same as end of input; so do we. */
function lex(s: string): Item[] {
  let pos = 0;
  const read = (): string => (pos < s.length ? s[pos++]! : '\0');
  const unread = () => {
    pos--;
  };
  const items: Item[] = [];
  for (;;) {
    let ch = read();
    while (isWhitespace(ch)) ch = read();
    if (ch === '\0') {
      items.push({ tok: Tok.EndOfString, lit: '' });
      return items;
    }
    unread();
    if (isSpecialSymbol(ch)) {
      let buffer = '';
      let last: Item | undefined;
      for (;;) {
        const c = read();
        if (c === '\0') break;
        if (isSpecialSymbol(c)) {
          buffer += c;
          const t = tokenOf(buffer);
          if (t !== undefined) last = { tok: t, lit: buffer };
          else if (last) {
            unread();
            break;
          }
        } else {
          unread();
          break;
        }
      }
      items.push(last ?? { tok: Tok.Error, lit: `error expected: keyword found '${buffer}'` });
    } else {
      let buffer = '';
      for (;;) {
        const c = read();
        if (c === '\0') break;
        if (isSpecialSymbol(c) || isWhitespace(c)) {
          unread();
          break;
        }
        buffer += c;
      }
      const t = tokenOf(buffer);
      items.push({ tok: t ?? Tok.Identifier, lit: buffer });
    }
  }
}

const enum Ctx {
  KeyAndOperator,
  Values,
}

class Parser {
  private position = 0;
  constructor(private readonly items: Item[]) {}

  private adjust(tok: Tok, ctx: Ctx): Tok {
    return ctx === Ctx.Values && (tok === Tok.In || tok === Tok.NotIn) ? Tok.Identifier : tok;
  }
  lookahead(ctx: Ctx): Item {
    const it = this.items[this.position]!;
    return { tok: this.adjust(it.tok, ctx), lit: it.lit };
  }
  consume(ctx: Ctx): Item {
    const it = this.items[this.position++]!;
    return { tok: this.adjust(it.tok, ctx), lit: it.lit };
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead(Ctx.Values);
      switch (tok) {
        case Tok.Identifier:
        case Tok.DoesNotExist: {
          let r: Requirement;
          try {
            r = this.parseRequirement();
          } catch (e) {
            throw new LabelSelectorError(`unable to parse requirement: ${(e as Error).message}`);
          }
          reqs.push(r);
          const t = this.consume(Ctx.Values);
          switch (t.tok) {
            case Tok.EndOfString:
              return reqs;
            case Tok.Comma: {
              const t2 = this.lookahead(Ctx.Values);
              if (t2.tok !== Tok.Identifier && t2.tok !== Tok.DoesNotExist) {
                throw new LabelSelectorError(`found '${t2.lit}', expected: identifier after ','`);
              }
              break;
            }
            default:
              throw new LabelSelectorError(`found '${t.lit}', expected: ',' or 'end of string'`);
          }
          break;
        }
        case Tok.EndOfString:
          return reqs;
        default:
          throw new LabelSelectorError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  private parseRequirement(): Requirement {
    const [key, inferred] = this.parseKeyAndInferOperator();
    if (inferred === 'exists' || inferred === '!') return newRequirement(key, inferred, []);
    const op = this.parseOperator();
    let values: Set<string>;
    if (op === 'in' || op === 'notin') values = this.parseValues();
    else values = this.parseExactValue();
    // sets.String.List(): deduplicated and sorted.
    return newRequirement(key, op, [...values].sort(goStringCompare));
  }

  private parseKeyAndInferOperator(): [string, Operator | ''] {
    let op: Operator | '' = '';
    let { tok, lit } = this.consume(Ctx.Values);
    if (tok === Tok.DoesNotExist) {
      op = '!';
      ({ tok, lit } = this.consume(Ctx.Values));
    }
    if (tok !== Tok.Identifier) throw new Error(`found '${lit}', expected: identifier`);
    const keyErr = validateLabelKey(lit, NIL_PATH);
    if (keyErr) throw new Error(formatFieldError(keyErr));
    const t = this.lookahead(Ctx.Values).tok;
    if ((t === Tok.EndOfString || t === Tok.Comma) && op !== '!') op = 'exists';
    return [lit, op];
  }

  private parseOperator(): Operator {
    const { tok, lit } = this.consume(Ctx.KeyAndOperator);
    switch (tok) {
      case Tok.In:
        return 'in';
      case Tok.Equals:
        return '=';
      case Tok.DoubleEquals:
        return '==';
      case Tok.GreaterThan:
        return 'gt';
      case Tok.LessThan:
        return 'lt';
      case Tok.NotIn:
        return 'notin';
      case Tok.NotEquals:
        return '!=';
      default:
        throw new Error(`found '${lit}', expected: ${BINARY_OPERATORS.join(', ')}`);
    }
  }

  private parseValues(): Set<string> {
    let { tok, lit } = this.consume(Ctx.Values);
    if (tok !== Tok.OpenPar) throw new Error(`found '${lit}' expected: '('`);
    ({ tok, lit } = this.lookahead(Ctx.Values));
    switch (tok) {
      case Tok.Identifier:
      case Tok.Comma: {
        const s = this.parseIdentifiersList();
        if (this.consume(Ctx.Values).tok !== Tok.ClosedPar) throw new Error(`found '${lit}', expected: ')'`);
        return s;
      }
      case Tok.ClosedPar:
        this.consume(Ctx.Values);
        return new Set(['']);
      default:
        throw new Error(`found '${lit}', expected: ',', ')' or identifier`);
    }
  }

  private parseIdentifiersList(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume(Ctx.Values);
      switch (tok) {
        case Tok.Identifier: {
          s.add(lit);
          const t2 = this.lookahead(Ctx.Values);
          switch (t2.tok) {
            case Tok.Comma:
              continue;
            case Tok.ClosedPar:
              return s;
            default:
              throw new Error(`found '${t2.lit}', expected: ',' or ')'`);
          }
        }
        case Tok.Comma: {
          if (s.size === 0) s.add('');
          const t2 = this.lookahead(Ctx.Values).tok;
          if (t2 === Tok.ClosedPar) {
            s.add('');
            return s;
          }
          if (t2 === Tok.Comma) {
            this.consume(Ctx.Values);
            s.add('');
          }
          break;
        }
        default:
          throw new Error(`found '${lit}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): Set<string> {
    const s = new Set<string>();
    const t = this.lookahead(Ctx.Values).tok;
    if (t === Tok.EndOfString || t === Tok.Comma) {
      s.add('');
      return s;
    }
    const { tok, lit } = this.consume(Ctx.Values);
    if (tok === Tok.Identifier) {
      s.add(lit);
      return s;
    }
    throw new Error(`found '${lit}', expected: identifier`);
  }
}

/** labels.Parse: throws LabelSelectorError with apimachinery's message. "" is Everything. */
export function parseLabelSelector(s: string): LabelSelector {
  if (s === '') return EVERYTHING;
  return selectorOf(new Parser(lex(s)).parse());
}

/**
 * metav1.LabelSelectorAsSelector: nil selects nothing, an empty selector everything. Throws LabelSelectorError
 * for invalid requirements or operators.
 */
export function selectorFromLabelSelector(
  ls:
    | { matchLabels?: Record<string, string> | null; matchExpressions?: { key: string; operator: string; values?: string[] | null }[] | null }
    | undefined
    | null,
): LabelSelector {
  if (ls === undefined || ls === null) return NOTHING;
  const matchLabels = ls.matchLabels ?? {};
  const exprs = ls.matchExpressions ?? [];
  const labelKeys = Object.keys(matchLabels);
  if (labelKeys.length + exprs.length === 0) return EVERYTHING;
  const reqs: Requirement[] = [];
  for (const k of labelKeys) reqs.push(newRequirement(k, '=', [matchLabels[k]!]));
  for (const e of exprs) {
    let op: Operator;
    switch (e.operator) {
      case 'In':
        op = 'in';
        break;
      case 'NotIn':
        op = 'notin';
        break;
      case 'Exists':
        op = 'exists';
        break;
      case 'DoesNotExist':
        op = '!';
        break;
      default:
        throw new LabelSelectorError(`${goQuote(e.operator)} is not a valid label selector operator`);
    }
    reqs.push(newRequirement(e.key, op, [...(e.values ?? [])]));
  }
  return selectorOf(reqs);
}

/**
 * The 400 a kube-apiserver answers for an unparsable ?labelSelector=: DecodeParameters hands the parser's error
 * to errors.NewBadRequest unchanged.
 */
export function badLabelSelector(err: unknown): StatusError {
  return newBadRequest(err instanceof Error ? err.message : String(err));
}
