// What a package that extends AutoCrud uses besides the host's surface (index.ts):
// `@kit/autocrud/extend`, as `@kit/core/extend` is core's. A change sink (what the change history
// and the outbox are) records a write's changes inside its transaction, and its SQL form is built
// from Kysely expressions: these types tie their user to the kysely version AutoCrud pins
// (`~0.28`), which a host application that only declares entities and calls repositories must not
// be tied to. A sink is registered with `crud.repository(Entity).addChangeSink(sink)`.
// Every name here is in api-report.md; a change to it is a visible diff there.
export type {
  ChangeRecord,
  ChangeSink,
  ChangeSinkSql,
  ChangeSql,
  ChangeTransaction,
} from './mapper/seam/changes.js';
