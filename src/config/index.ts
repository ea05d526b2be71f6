// The gateway's configuration: the Config type others code against and the loader that produces it.

export * from './types.js';
export { ConfigError, loadConfig, parseConfig, type ParseOptions } from './parse.js';
