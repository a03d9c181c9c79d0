import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/** The ledger consumer's table (portable TypeORM Table API, like the payments migration). */
export class CreateLedgerEntries1763700009000 implements MigrationInterface {
  name = 'CreateLedgerEntries1763700009000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mapped = queryRunner.connection.driver.mappedDataTypes;
    await queryRunner.createTable(
      new Table({
        name: 'ledger_entries',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'payment_id', type: 'varchar', length: '36' },
          { name: 'tenant_id', type: 'varchar', length: '100' },
          { name: 'entry_type', type: 'varchar', length: '16' },
          { name: 'amount', type: 'decimal', precision: 18, scale: 2 },
          { name: 'currency', type: 'varchar', length: '3' },
          { name: 'customer_id', type: 'varchar', length: '64' },
          { name: 'message_id', type: 'varchar', length: '255' },
          { name: 'created_at', type: mapped.createDate as string, precision: 3 },
        ],
      }),
    );
    // Not unique on purpose: exactly one entry per payment is what the inbox guarantees.
    await queryRunner.createIndex(
      'ledger_entries',
      new TableIndex({ name: 'ix_ledger_entries_payment', columnNames: ['payment_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('ledger_entries');
  }
}
