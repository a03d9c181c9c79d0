import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/** The notifications service's table (portable TypeORM Table API, like the ledger's). */
export class CreateNotifications1763700011000 implements MigrationInterface {
  name = 'CreateNotifications1763700011000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mapped = queryRunner.connection.driver.mappedDataTypes;
    await queryRunner.createTable(
      new Table({
        name: 'notifications',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'payment_id', type: 'varchar', length: '36' },
          { name: 'customer_id', type: 'varchar', length: '64' },
          { name: 'text', type: 'varchar', length: '200' },
          { name: 'message_id', type: 'varchar', length: '255' },
          { name: 'created_at', type: mapped.createDate as string, precision: 3 },
        ],
      }),
    );
    // Not unique on purpose: exactly one notification per payment is what the inbox guarantees.
    await queryRunner.createIndex(
      'notifications',
      new TableIndex({ name: 'ix_notifications_payment', columnNames: ['payment_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('notifications');
  }
}
