import { describe, expect, it } from 'vitest';
import {
  LabelSelectorError,
  badLabelSelector,
  everything,
  newRequirement,
  nothing,
  parseLabelSelector,
  selectorFromLabelSelector,
  selectorFromSet,
} from '../../src/api/labels.js';

const QNAME_REGEX =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_REGEX =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

function parseError(s: string): string {
  try {
    parseLabelSelector(s);
  } catch (e) {
    expect(e).toBeInstanceOf(LabelSelectorError);
    return (e as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(s)} to fail`);
}

// apimachinery/pkg/labels/selector_test.go
describe('parse (apimachinery TestSelectorParse)', () => {
  it.each(['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=', 'x= ', 'x=,z= ', 'x= ,z= ', '!x', 'x>1', 'x>1,z<5'])(
    'good %j restrings without spaces',
    (s) => expect(parseLabelSelector(s).toString()).toBe(s.replaceAll(' ', '')),
  );
  it.each(['x=a||y=b', 'x==a==b', '!x=a', 'x<a'])('bad %j', (s) => expect(() => parseLabelSelector(s)).toThrow(LabelSelectorError));

  it('is deterministic', () => {
    expect(parseLabelSelector('x=a,a=x').toString()).toBe(parseLabelSelector('a=x,x=a').toString());
    expect(parseLabelSelector('x=a,a=x').toString()).toBe('a=x,x=a');
  });
});

describe('parse (apimachinery TestSetSelectorParser)', () => {
  const good: Array<[string, string]> = [
    ['', ''],
    ['\rx', 'x'],
    ['this-is-a-dns.domain.com/key-with-dash', 'this-is-a-dns.domain.com/key-with-dash'],
    ['this-is-another-dns.domain.com/key-with-dash in (so,what)', 'this-is-another-dns.domain.com/key-with-dash in (so,what)'],
    ['0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)', '0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)'],
    ['foo  in\t (abc)', 'foo in (abc)'],
    ['x notin\n (abc)', 'x notin (abc)'],
    ['x  notin\t\t\t(abc,def)', 'x notin (abc,def)'],
    ['x in (abc,def)', 'x in (abc,def)'],
    ['x in (abc,)', 'x in (,abc)'],
    ['x in ()', 'x in ()'],
    ['x notin (abc,def),bar,z in (),w', 'bar,w,x notin (abc,def),z in ()'],
    ['x,y', 'x,y'],
    ['x,y in (a)', 'x,y in (a)'],
    ['x=a', 'x=a'],
    ['x>1', 'x>1'],
    ['x<7', 'x<7'],
    ['x=a,y!=b', 'x=a,y!=b'],
    ['x=a,y!=b,z in (h,i,j)', 'x=a,y!=b,z in (h,i,j)'],
    ['x notin ( )', 'x notin ()'],
    ['x notin (, a)', 'x notin (,a)'],
    ['a ', 'a'],
    ['a in (x,y,notin, z,in)', 'a in (in,notin,x,y,z)'],
    ['x==a', 'x==a'],
    ['notin=in', 'notin=in'],
  ];
  it.each(good)('%j -> %j', (input, out) => expect(parseLabelSelector(input).toString()).toBe(out));

  it.each(['x=a||y=b', ',x,y', 'x nott in (y)', 'a in (xyz),', 'a in (xyz)b notin ()', 'a in (xyz abc)', 'a notin(', 'a (', '('])(
    'rejects %j',
    (s) => expect(() => parseLabelSelector(s)).toThrow(LabelSelectorError),
  );

  it('keeps requirements sorted by key', () => {
    const sel = parseLabelSelector('x notin (abc,def),bar,z in (),w');
    expect(sel.requirements.map((r) => r.key)).toEqual(['bar', 'w', 'x', 'z']);
    expect(sel.requirements[2]).toEqual({ key: 'x', operator: 'notin', values: ['abc', 'def'] });
    expect(parseLabelSelector('x in (b,,a,b)').requirements[0]!.values).toEqual(['', 'a', 'b']);
  });
});

describe('parse error messages (exactly as the apiserver returns them)', () => {
  it.each([
    ['x y', "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"],
    ['x=a b', "found 'b', expected: ',' or 'end of string'"],
    ['x>-5', `unable to parse requirement: values[0][x]: Invalid value: "-5": ${'a valid label'} must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`],
    [',x', "found ',', expected: !, identifier, or 'end of string'"],
    ['a in (xyz),', "found '', expected: identifier after ','"],
    ['x==a==b', "found '==', expected: ',' or 'end of string'"],
    ['!x=a', "found '=', expected: ',' or 'end of string'"],
    ['x nott in (y)', "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"],
    ['a in (xyz abc)', "unable to parse requirement: found 'abc', expected: ',' or ')'"],
    ['a notin(', "unable to parse requirement: found '', expected: ',', ')' or identifier"],
    ['a (', "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"],
    ['(', "found '(', expected: !, identifier, or 'end of string'"],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a=(', "unable to parse requirement: found '(', expected: identifier"],
    ['!=', "found '!=', expected: !, identifier, or 'end of string'"],
    ['!!a', "unable to parse requirement: found '!', expected: identifier"],
    ['x<a', "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"],
    ['app:monolith', `unable to parse requirement: <nil>: Invalid value: "app:monolith": name part ${QNAME_REGEX}`],
    [
      'a/b/c ?=? def',
      `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name ${QNAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ],
    [
      'app.kubernetes_io/name=x',
      "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ],
    ['app=a$b', `unable to parse requirement: values[0][app]: Invalid value: "a$b": ${LABEL_VALUE_REGEX}`],
    [
      `a=${'v'.repeat(64)}`,
      `unable to parse requirement: values[0][a]: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
    ],
    ['/a', `unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty`],
    [`${'k'.repeat(64)}`, `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`],
  ])('%j', (s, msg) => expect(parseError(s)).toBe(msg));

  it('reports several value errors aggregated', () => {
    expect(parseError('a in (-x,-y)')).toBe(
      `unable to parse requirement: [values[0][a]: Invalid value: "-x": ${LABEL_VALUE_REGEX}, values[1][a]: Invalid value: "-y": ${LABEL_VALUE_REGEX}]`,
    );
  });

  it('badLabelSelector is the 400 the apiserver sends', () => {
    let err: unknown;
    try {
      parseLabelSelector('x=a b');
    } catch (e) {
      err = e;
    }
    const s = badLabelSelector(err).status;
    expect([s.code, s.reason, s.message]).toEqual([400, 'BadRequest', "found 'b', expected: ',' or 'end of string'"]);
  });
});

describe('matching (apimachinery TestSelectorMatches, TestRequirementSelectorMatching)', () => {
  const yes: Array<[string, Record<string, string>]> = [
    ['', { x: 'y' }],
    ['x=y', { x: 'y' }],
    ['x=y,z=w', { x: 'y', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'a' }],
    ['notin=in', { notin: 'in' }],
    ['x', { x: 'z' }],
    ['!x', { y: 'z' }],
    ['x>1', { x: '2' }],
    ['x<1', { x: '0' }],
    ['foo=bar,baz=blah', { foo: 'bar', baz: 'blah' }],
    ['x in (foo),y notin (alpha)', { x: 'foo', y: 'baz' }],
    ['x notin (),y', { y: '' }],
    ['!x,y', { y: '' }],
    ['z>1', { z: '2' }],
    ['x!=y', {}],
    ['x notin (a)', {}],
    ['x=', { x: '' }],
    ['x>5', { x: '+6' }],
  ];
  const no: Array<[string, Record<string, string>]> = [
    ['x=z', {}],
    ['x=y', { x: 'z' }],
    ['x=y,z=w', { x: 'w', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'w' }],
    ['x', { y: 'z' }],
    ['!x', { x: 'z' }],
    ['x>1', { x: '0' }],
    ['x<1', { x: '2' }],
    ['foo=bar,foobar=bar,baz=blah', { foo: 'bar', baz: 'blah' }],
    ['x in (foo),y in (alpha)', { x: 'foo', y: 'baz' }],
    ['x notin (),!y', { y: '' }],
    ['x in ()', { y: 'baz' }],
    ['z>1', { z: 'v2' }],
    ['z>1', {}],
    ['x=', {}],
  ];
  it.each(yes)('%j matches %j', (s, ls) => expect(parseLabelSelector(s).matches(ls)).toBe(true));
  it.each(no)('%j does not match %j', (s, ls) => expect(parseLabelSelector(s).matches(ls)).toBe(false));

  it('treats undefined labels as an empty set and ignores prototype keys', () => {
    expect(parseLabelSelector('!x').matches(undefined)).toBe(true);
    expect(parseLabelSelector('x').matches(undefined)).toBe(false);
    expect(parseLabelSelector('toString').matches({})).toBe(false);
  });
});

describe('selector helpers', () => {
  it('everything/nothing', () => {
    expect(everything().empty).toBe(true);
    expect(everything().matches({ x: 'y' })).toBe(true);
    expect(nothing().empty).toBe(false);
    expect(nothing().matches({})).toBe(false);
    expect(nothing().toString()).toBe('');
  });

  it('equalities lists only what every match must carry', () => {
    expect(parseLabelSelector('a=1,b==2,c in (3),d in (4,5),e!=6,f').equalities()).toEqual([
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
    ]);
  });

  it('selectorFromSet sorts keys', () => {
    const s = selectorFromSet({ b: '2', a: '1' });
    expect(s.toString()).toBe('a=1,b=2');
    expect(s.matches({ a: '1', b: '2', c: '3' })).toBe(true);
    expect(selectorFromSet(undefined).empty).toBe(true);
  });

  it('newRequirement validates arity and operators (TestRequirementConstructor)', () => {
    expect(() => newRequirement('x', 'in', [])).toThrow("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty");
    expect(() => newRequirement('x', 'notin', [])).toThrow(LabelSelectorError);
    expect(newRequirement('x', 'in', ['foo']).values).toEqual(['foo']);
    expect(newRequirement('1foo', 'in', ['bar']).key).toBe('1foo');
    expect(newRequirement('1234', 'in', ['bar']).key).toBe('1234');
    expect(newRequirement('y', 'gt', ['1']).operator).toBe('gt');
    expect(() => newRequirement('foo', 'gt', ['bar'])).toThrow(LabelSelectorError);
    expect(() => newRequirement('a'.repeat(254), 'exists', [])).toThrow(LabelSelectorError);
    expect(() => newRequirement('x', '=', ['a', 'b'])).toThrow('values: Invalid value: ["a","b"]: exact-match compatibility requires one single value');
    expect(() => newRequirement('x', 'exists', ['a'])).toThrow('values set must be empty for exists and does not exist');
    expect(() => newRequirement('x', 'like', ['a'])).toThrow(
      'operator: Unsupported value: "like": supported values: "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"',
    );
    expect(() => newRequirement('-x', 'exists', [])).toThrow(`key: Invalid value: "-x": name part ${QNAME_REGEX}`);
  });
});

describe('selectorFromLabelSelector (metav1.LabelSelectorAsSelector)', () => {
  it('nil selects nothing, empty selects everything', () => {
    expect(selectorFromLabelSelector(null).matches({ a: 'b' })).toBe(false);
    expect(selectorFromLabelSelector(undefined).matches({})).toBe(false);
    expect(selectorFromLabelSelector({}).matches({ a: 'b' })).toBe(true);
    expect(selectorFromLabelSelector({ matchLabels: {}, matchExpressions: [] }).empty).toBe(true);
  });

  it('combines matchLabels and matchExpressions', () => {
    const s = selectorFromLabelSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['fe', 'be'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'env', operator: 'NotIn', values: ['prod'] },
        { key: 'team', operator: 'Exists' },
      ],
    });
    expect(s.toString()).toBe('app=web,!canary,env notin (prod),team,tier in (be,fe)');
    expect(s.matches({ app: 'web', tier: 'fe', team: 'x' })).toBe(true);
    expect(s.matches({ app: 'web', tier: 'fe', team: 'x', canary: 'y' })).toBe(false);
    expect(s.matches({ app: 'web', tier: 'fe', team: 'x', env: 'prod' })).toBe(false);
  });

  it('rejects unknown operators and invalid values', () => {
    expect(() => selectorFromLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] })).toThrow(
      '"Gt" is not a valid label selector operator',
    );
    expect(() => selectorFromLabelSelector({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] })).toThrow(
      "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
    );
  });
});
