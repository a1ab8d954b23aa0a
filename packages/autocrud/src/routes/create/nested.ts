// POST / with one row carrying the rows of its one-to-many relations (`{ ..., lines: [...] }`):
// the row and its children in one transaction, each child under the caller's rule for its own
// entity's create.
import type { Row } from '../../mapper/repository.js';
import { CrudOperations } from '../../operations.js';
import { admit, forbiddenWrite, refuse, refused, withReferences } from '../admission.js';
import { ForbiddenError } from '../route-errors.js';
import { writeOptions } from '../changes.js';
import { visible } from '../fields.js';
import { badRequest } from '../problems.js';
import type { CreateCall, CreatePlan, UpsertPreference } from './plan.js';
import { parameterText } from '../../answers.js';

/**
 * The plan of a nested create, or `undefined` once a 400 (a bad field, `lines[3].quantity`; an
 * upsert asked for) or a 403 naming the row or child is sent.
 *
 * @example
 * ```ts
 * const relations = nested.carried(body);
 * if (relations.length > 0) return planNested(createCall, body, relations, preference);
 * ```
 */
export async function planNested(
  c: CreateCall,
  given: Record<string, unknown>,
  relations: readonly string[],
  preference: UpsertPreference | undefined,
): Promise<CreatePlan | undefined> {
  const { request, reply } = c;
  const { repository, authz, nested, relationsOf, created } = c.context;
  if (preference) {
    badRequest(reply, {
      in: 'headers',
      name: 'Prefer',
      detail: parameterText('nestedUpsert', {
        token: preference.token,
        relations: relations.join(', '),
      }),
    });
    return undefined;
  }
  const tree = nested.read(reply, given, relations);
  if (!tree) return undefined;
  if (!authz.mayWrite(request, reply, tree.values)) return undefined;
  // Each child is created under the caller's rule for its own entity's create: its scope sets its owner, its hidden fields leave the answer.
  const hiddenChildren = new Map<string, ReadonlySet<string>>();
  for (const name of relations) {
    const child = tree.children[name];
    if (!child?.authorization) continue;
    const admitted = await admit(
      child.entity,
      child.authorization,
      CrudOperations.Create,
      'create',
      request,
    );
    if (refused(admitted)) {
      refuse(reply, admitted.within(name));
      return undefined;
    }
    // The rows a child may reference are the caller's too (the parent link is set by the create).
    const access = await withReferences(request, child.entity, admitted, relationsOf);
    for (let i = 0; i < child.rows.length; i++) {
      const refused = forbiddenWrite(
        child.entity,
        access,
        child.rows[i] as Record<string, unknown>,
      );
      if (refused) {
        refuse(reply, new ForbiddenError(refused).within(`${name}[${i}]`));
        return undefined;
      }
    }
    if (access.scope) tree.children[name] = { ...child, scope: access.scope };
    if (access.hidden.size > 0) hiddenChildren.set(name, access.hidden);
  }
  const extra = Object.fromEntries(relations.map((name) => [name, tree.children[name]?.rows]));
  const shownTree = (row: Row): Row => {
    const out = c.shown(row);
    for (const [name, hidden] of hiddenChildren)
      if (Array.isArray(row[name])) out[name] = (row[name] as Row[]).map((r) => visible(r, hidden));
    return out;
  };
  return {
    body: tree.values,
    extra,
    serializeAsJson: true,
    create: async () => {
      // A child table may record its changes when the parent's does not: the context always goes with a tree.
      const row = await repository.createTree(
        tree.values,
        tree.children,
        writeOptions(true, request, reply, c.call),
      );
      return created(row, shownTree(row));
    },
  };
}
