/** A user of the shop. */
export interface User {
  id: string;
  name: string;
  email: string;
}

/** In-memory user store; a real service would talk to a database here. */
export class UserRepository {
  readonly #users = new Map<string, User>([
    ['1', { id: '1', name: 'Ada Lovelace', email: 'ada@example.com' }],
    ['2', { id: '2', name: 'Grace Hopper', email: 'grace@example.com' }],
  ]);

  list(): User[] {
    return [...this.#users.values()];
  }

  get(id: string): User | undefined {
    return this.#users.get(id);
  }

  add(name: string, email: string): User {
    const user = { id: String(this.#users.size + 1), name, email };
    this.#users.set(user.id, user);
    return user;
  }
}
