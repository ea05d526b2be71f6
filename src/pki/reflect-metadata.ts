// @peculiar/x509 resolves its algorithms through tsyringe, which refuses to load unless the Reflect metadata API
// exists. The usual answer is the reflect-metadata package; it is not among our dependencies and tsyringe only
// needs the basic calls for the parameterless classes x509 registers, so a small WeakMap-backed version of the
// proposal's API is installed here, only when no other polyfill did it first. Import this before @peculiar/x509.

type Key = unknown;
type MetadataReflect = typeof Reflect & {
  getMetadata?: (key: Key, target: object, prop?: string | symbol) => unknown;
  getOwnMetadata?: (key: Key, target: object, prop?: string | symbol) => unknown;
  hasMetadata?: (key: Key, target: object, prop?: string | symbol) => boolean;
  hasOwnMetadata?: (key: Key, target: object, prop?: string | symbol) => boolean;
  defineMetadata?: (key: Key, value: unknown, target: object, prop?: string | symbol) => void;
  metadata?: (key: Key, value: unknown) => (target: object, prop?: string | symbol) => void;
};

const R = Reflect as MetadataReflect;

if (typeof R.getMetadata !== 'function') {
  const store = new WeakMap<object, Map<string | symbol | undefined, Map<Key, unknown>>>();
  const own = (target: object, prop: string | symbol | undefined, create: boolean): Map<Key, unknown> | undefined => {
    let byProp = store.get(target);
    if (!byProp) {
      if (!create) return undefined;
      byProp = new Map();
      store.set(target, byProp);
    }
    let m = byProp.get(prop);
    if (!m && create) {
      m = new Map();
      byProp.set(prop, m);
    }
    return m;
  };
  const find = (key: Key, target: object, prop?: string | symbol): { found: boolean; value?: unknown } => {
    for (let t: object | null = target; t; t = Object.getPrototypeOf(t)) {
      const m = own(t, prop, false);
      if (m?.has(key)) return { found: true, value: m.get(key) };
    }
    return { found: false };
  };
  R.defineMetadata = (key, value, target, prop) => void own(target, prop, true)!.set(key, value);
  R.getOwnMetadata = (key, target, prop) => own(target, prop, false)?.get(key);
  R.hasOwnMetadata = (key, target, prop) => own(target, prop, false)?.has(key) ?? false;
  R.getMetadata = (key, target, prop) => find(key, target, prop).value;
  R.hasMetadata = (key, target, prop) => find(key, target, prop).found;
  R.metadata = (key, value) => (target, prop) => R.defineMetadata!(key, value, target, prop);
}

export {};
