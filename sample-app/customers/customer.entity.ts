import { EntitySchema } from 'typeorm';

/** A customer as stored. `version` is an integer counter, or on SQL Server a rowversion (8 bytes). */
export class Customer {
  id!: string;
  name!: string;
  email!: string;
  version!: number | Buffer;
}

/**
 * The customers table for a DataSource of the given driver type: on SQL Server the version is a
 * ROWVERSION the server maintains; elsewhere an integer version column (TypeORM's
 * `@VersionColumn()` semantics) that ConditionalWriter increments in each write statement.
 */
export function customerEntity(type: string): EntitySchema<Customer> {
  const mssql = type === 'mssql';
  const text = mssql ? 'nvarchar' : 'varchar';
  return new EntitySchema<Customer>({
    name: 'Customer',
    target: Customer,
    tableName: 'customers',
    columns: {
      id: { type: text, length: 64, primary: true },
      name: { type: text, length: 200 },
      email: { type: text, length: 254 },
      version: mssql
        ? { type: 'rowversion', insert: false, update: false }
        : { type: 'int', version: true },
    },
  });
}
