// Where node was given a V8 flag: its command line, or NODE_OPTIONS (which the image and the chart set). Node reads
// NODE_OPTIONS first and the command line after it, and V8 keeps the last value it is given, so the command line wins.

export type FlagSource = 'command line' | 'NODE_OPTIONS';

export interface FlagSetting {
  /** The last value given ('--flag=v' or '--flag v'); undefined when the last one had none. */
  value: string | undefined;
  source: FlagSource;
}

/** The last setting of --<name> (dashes and underscores alike, as V8 reads them) in args. */
function lastIn(name: string, args: readonly string[]): { value: string | undefined } | undefined {
  const flag = new RegExp(`^--${name.replace(/[-_]/g, '[-_]')}(?:=(.*))?$`);
  let found: { value: string | undefined } | undefined;
  for (let i = 0; i < args.length; i++) {
    const m = flag.exec(args[i]!);
    if (!m) continue;
    const next = args[i + 1];
    found = { value: m[1] ?? (next !== undefined && !next.startsWith('--') ? next : undefined) };
  }
  return found;
}

/** How node was given --<name>, if it was: the command line's last setting, else NODE_OPTIONS'. */
export function nodeFlag(name: string, execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env.NODE_OPTIONS): FlagSetting | undefined {
  const fromArgs = lastIn(name, execArgv);
  if (fromArgs) return { ...fromArgs, source: 'command line' };
  const fromEnv = lastIn(name, (nodeOptions ?? '').split(/\s+/).filter(Boolean));
  if (fromEnv) return { ...fromEnv, source: 'NODE_OPTIONS' };
  return undefined;
}
