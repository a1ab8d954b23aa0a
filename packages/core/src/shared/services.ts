import {
  AwilixResolutionError,
  createContainer,
  InjectionMode,
  type AwilixContainer,
  type Constructor,
} from 'awilix';
import { KitError } from './errors.js';

/**
 * The Kit service container: an awilix container in PROXY injection mode (constructors receive the cradle).
 *
 * @example
 * ```ts
 * const services: KitServices = app.kit.services;
 * services.register({ clock: asValue(() => new Date()) });
 * ```
 */
export type KitServices = AwilixContainer;

/**
 * A class Kit builds from the container: its constructor receives the awilix cradle, typed by the
 * class as the dependencies it reads (`constructor({ db }: { db: Db })`).
 *
 * @example
 * ```ts
 * class ReportService { constructor({ db }: { db: Db }) {} }
 * const cls: ServiceClass<ReportService> = ReportService;
 * ```
 */
export type ServiceClass<T> = new (...args: never[]) => T;

/** Creates the container Kit owns when the host did not pass one (`opt.container`). */
export function createServices(): KitServices {
  return createContainer({ injectionMode: InjectionMode.PROXY, strict: true });
}

/**
 * Rewrites an awilix resolution failure as `KIT_ERR_DEPENDENCY`, naming the missing registration
 * and who needs it, so the fix (register it) is obvious.
 */
export function dependencyError(err: unknown, consumer: string): unknown {
  if (!(err instanceof AwilixResolutionError)) return err;
  const missing = /Could not resolve '([^']+)'/.exec(err.message)?.[1] ?? 'unknown';
  const path = /Resolution path: (.*)$/m.exec(err.message)?.[1]?.split(' -> ') ?? [missing];
  const neededBy = path.length > 1 ? `'${path[path.length - 2]}'` : consumer;
  const chain = [consumer, ...path].filter((v, i, all) => all.indexOf(v) === i).join(' -> ');
  return new KitError(
    'KIT_ERR_DEPENDENCY',
    `Missing dependency '${missing}' needed by ${neededBy} (resolution path: ${chain}). ` +
      `Register it in app.kit.services (e.g. app.kit.services.register({ ${missing}: asClass(...) })) before useKit().`,
    { cause: err },
  );
}

/** Builds `cls` with its constructor dependencies from the container; a missing one is `KIT_ERR_DEPENDENCY`. */
export function buildService<T>(
  services: KitServices,
  cls: ServiceClass<T>,
  consumer = cls.name,
): T {
  try {
    return services.build(cls as unknown as Constructor<T>);
  } catch (err) {
    throw dependencyError(err, consumer);
  }
}

/**
 * Resolves every registration once (scoped ones in a throw-away scope, disposed afterwards) so
 * that a missing dependency fails start-up instead of the first request that needs it. Singletons
 * are built here, once; transient registrations are built and dropped.
 */
export async function validateServices(services: KitServices): Promise<void> {
  const scope = services.createScope();
  try {
    for (const name of Object.keys(services.registrations)) {
      try {
        scope.resolve(name);
      } catch (err) {
        throw dependencyError(err, `'${name}'`);
      }
    }
  } finally {
    await scope.dispose();
  }
}

/** Instantiates the named registrations now, so their cost is paid before the readiness gate opens. */
export function resolveEagerSingletons(services: KitServices, names: readonly string[]): void {
  for (const name of names) {
    if (!services.hasRegistration(name)) {
      throw new KitError(
        'KIT_ERR_DEPENDENCY',
        `eagerSingletons names '${name}', which is not registered in app.kit.services. Register it or remove it from opt.eagerSingletons.`,
      );
    }
    try {
      services.resolve(name);
    } catch (err) {
      throw dependencyError(err, `'${name}'`);
    }
  }
}
