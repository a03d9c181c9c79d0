import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';
import { allowRowVersionColumns } from '../../lib';

/**
 * The sample's customers table. Its version column is a ROWVERSION on SQL Server (the server
 * sets it on every write) and an integer elsewhere (the library increments it in each write).
 */
export class CreateCustomers1763700007000 implements MigrationInterface {
  name = 'CreateCustomers1763700007000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mssql = queryRunner.connection.options.type === 'mssql';
    const text = mssql ? 'nvarchar' : 'varchar';
    // Babelfish accepts ROWVERSION in DDL only with its escape hatch set for the session.
    await allowRowVersionColumns(queryRunner);
    await queryRunner.createTable(
      new Table({
        name: 'customers',
        columns: [
          { name: 'id', type: text, length: '64', isPrimary: true },
          { name: 'name', type: text, length: '200' },
          { name: 'email', type: text, length: '254' },
          mssql
            ? { name: 'version', type: 'rowversion' }
            : { name: 'version', type: 'int', default: 1 },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('customers');
  }
}
