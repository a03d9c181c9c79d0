import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

export class CreatePayments1763700001000 implements MigrationInterface {
  name = 'CreatePayments1763700001000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mapped = queryRunner.connection.driver.mappedDataTypes;
    await queryRunner.createTable(
      new Table({
        name: 'payments',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '100' },
          { name: 'amount', type: 'decimal', precision: 18, scale: 2 },
          { name: 'currency', type: 'varchar', length: '3' },
          { name: 'customer_id', type: 'varchar', length: '64' },
          { name: 'status', type: 'varchar', length: '16' },
          { name: 'created_at', type: mapped.createDate as string, precision: 3 },
        ],
      }),
    );
    await queryRunner.createIndex(
      'payments',
      new TableIndex({ name: 'ix_payments_customer', columnNames: ['customer_id', 'created_at'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('payments');
  }
}
