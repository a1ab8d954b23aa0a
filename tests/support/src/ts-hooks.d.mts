// Importing the module registers the hooks; it exports nothing.
export {};
