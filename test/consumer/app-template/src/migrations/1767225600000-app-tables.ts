import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

export class AppTables1767225600000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'payments',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'customer_id', type: 'varchar', length: '64' },
          { name: 'amount', type: 'int' },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'ledger_entries',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'payment_id', type: 'varchar', length: '36' },
          { name: 'amount', type: 'int' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('ledger_entries');
    await q.dropTable('payments');
  }
}
