// The authorization declaration's start-up checks: typed against the entity's fields, and refused
// at once (KIT_ERR_AUTOCRUD_AUTHORIZATION naming the option and its value) when it cannot be
// enforced as written. No engine needed: @AutoCrud checks at decoration.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import {
  AutoCrud,
  CrudOperations,
  defineEntity,
  type AutoCrudAuthorization,
  type Entity,
} from '@kit/autocrud';
import { Order } from './authorization.ts';

// An entity with change history, for the rules of a class that serves GET /{pk}/history.
const Logged = defineEntity({
  name: 'AuthLogged',
  table: 'auth_logged',
  schema: Type.Object({ id: Type.Integer(), name: Type.String({ maxLength: 20 }) }),
  writable: ['name'],
  history: true,
});

const decorate = (
  authorization: unknown,
  operations: number = CrudOperations.All,
  entity: Entity = Order,
) => AutoCrud(entity, { operations, authorization: authorization as AutoCrudAuthorization<'id'> });

function refused(
  authorization: unknown,
  message: RegExp,
  operations?: number,
  entity?: Entity,
): void {
  assert.throws(
    () => decorate(authorization, operations, entity),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_AUTHORIZATION', err.message);
      assert.match(err.message, message);
      return true;
    },
  );
}

export function optionsSuite(): void {
  describe('AutoCrud authorization declaration', () => {
    it("is typed against the entity's fields", () => {
      assert.throws(() =>
        AutoCrud(Order, {
          authorization: {
            // @ts-expect-error weight is not a field of Order
            rules: [{ role: 'a', allow: CrudOperations.List, checks: { weight: 'sub' } }],
          },
        }),
      );
      assert.throws(() =>
        AutoCrud(Order, {
          authorization: {
            // @ts-expect-error a hidden field must be a field of Order
            rules: [{ role: 'a', allow: CrudOperations.List, hiddenFields: ['secret'] }],
          },
        }),
      );
      assert.throws(() =>
        AutoCrud(Order, {
          // @ts-expect-error a rule names a role or anonymous: true, not both
          authorization: { rules: [{ role: 'a', anonymous: true, allow: CrudOperations.List }] },
        }),
      );
      assert.doesNotThrow(() =>
        AutoCrud(Order, {
          authorization: {
            rules: [
              {
                role: 'a',
                allow: CrudOperations.List,
                checks: { ownerId: 'sub' },
                hiddenFields: ['cost'],
              },
            ],
          },
        }),
      );
    });

    it('an empty rule set, or empty checks, is refused naming the option', () => {
      refused(
        { rules: [] },
        /@AutoCrud\(Order\) options\.authorization\.rules is \[\]: an empty rule set allows nothing/,
      );
      refused({}, /authorization\.rules is undefined/);
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, checks: {} }] },
        /rules\[0\]\.checks is \{\}: .*an empty set checks nothing/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, hiddenFields: [] }] },
        /rules\[0\]\.hiddenFields is \[\]/,
      );
    });

    it('an unknown field is refused naming the option, the value and the fields', () => {
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, checks: { ownerID: 'sub' } }] },
        /rules\[0\]\.checks is \{"ownerID":"sub"\}: "ownerID" is not a field of Order; fields: id, ownerId/,
      );
      refused(
        {
          rules: [
            { role: 'a', allow: CrudOperations.List },
            { role: 'b', allow: CrudOperations.List, hiddenFields: ['cost', 'price'] },
          ],
        },
        /rules\[1\]\.hiddenFields is \["cost","price"\]: "price" is not a field of Order/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, readOnlyFields: ['version'] }] },
        /readOnlyFields is \["version"\]: version is not writable anyway/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, hiddenFields: ['id'] }] },
        /the primary key id .* cannot be hidden/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, checks: { version: 'sub' } }] },
        /checks\.version is "sub": version is the entity's version/,
      );
    });

    it('a malformed claim path is refused naming the option and the value', () => {
      for (const path of [
        '',
        'realm_access..roles',
        '.roles',
        'roles.',
        ' roles',
        [],
        ['a', ''],
        5,
      ]) {
        refused(
          { rolesClaim: path, rules: [{ role: 'a', allow: CrudOperations.List }] },
          /authorization\.rolesClaim is .*: a claim path is/,
        );
        refused(
          { rules: [{ role: 'a', allow: CrudOperations.List, checks: { ownerId: path } }] },
          /rules\[0\]\.checks\.ownerId is .*: a claim path is/,
        );
      }
      assert.doesNotThrow(() =>
        decorate({
          rolesClaim: ['https://example.com/roles'],
          rules: [{ role: 'a', allow: CrudOperations.List, checks: { ownerId: 'tenant.owner' } }],
        }),
      );
    });

    it('a rule that cannot be enforced as written is refused: unknown option, role and anonymous, anonymous with checks, flags the class does not serve', () => {
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, check: { ownerId: 'sub' } }] },
        /rules\[0\]\.check is \{"ownerId":"sub"\}: not an option of a rule/,
      );
      refused(
        { rules: [{ allow: CrudOperations.List }] },
        /names either a role .* or anonymous: true/,
      );
      refused(
        { rules: [{ role: '', allow: CrudOperations.List }] },
        /rules\[0\]\.role is "": a role is a non-empty string/,
      );
      refused(
        { rules: [{ anonymous: true, allow: CrudOperations.List, checks: { ownerId: 'sub' } }] },
        /an anonymous rule has no token/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List | CrudOperations.Patch }] },
        /allow is 65: allows patch, which the class does not serve/,
      );
      refused({ rules: [{ role: 'a', allow: 0 }] }, /allow is 0: combine CrudOperations flags/);
      refused(
        { rules: [{ role: 'a', allow: 256 }] },
        /allow is 256: combine CrudOperations flags \(List \| Get \| Create \| Update \| Delete \| ListAll \| Patch \| History\)/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List, where: 'ownerId = 1' }] },
        /where is "ownerId = 1": where is a function/,
      );
      refused(
        { rules: [{ role: 'a', allow: CrudOperations.List }], roles: 'x' },
        /authorization\.roles is "x": not an option of authorization/,
      );
    });

    it('History in a rule: GET /{pk}/history follows the rule that allows the read, so History is accepted beside it and refused without it, saying so', () => {
      const served = CrudOperations.All | CrudOperations.History;
      const rule = (allow: number) => ({ rules: [{ role: 'a', allow }] });
      // The class's operations reused as a rule's allow, or the read and its history named together.
      for (const allow of [served, CrudOperations.Get | CrudOperations.History])
        assert.doesNotThrow(() => decorate(rule(allow), served, Logged));
      for (const allow of [CrudOperations.History, CrudOperations.List | CrudOperations.History])
        refused(
          rule(allow),
          new RegExp(
            `rules\\[0\\]\\.allow is ${allow}: allows history but not get: GET /\\{pk\\}/history takes the rule that allows get`,
          ),
          served,
          Logged,
        );
      // A class that serves no read by key: the history follows the list rule.
      const listed = CrudOperations.List | CrudOperations.History;
      assert.doesNotThrow(() => decorate(rule(listed), listed, Logged));
      refused(rule(CrudOperations.History), /allows history but not list/, listed, Logged);
      // A class that does not serve the history: as for any flag it does not serve.
      refused(
        rule(CrudOperations.Get | CrudOperations.History),
        /allow is 130: allows history, which the class does not serve/,
        CrudOperations.All,
        Logged,
      );
    });
  });
}
