import { type MigrationInterface, type QueryRunner, TableColumn } from 'typeorm';

/**
 * `ledger_entries.position`: the entry's place among its payment's entries when the ledger
 * consumer applied it (1 for the first). Null for entries written before this column existed.
 */
export class AddLedgerEntryPosition1763700013000 implements MigrationInterface {
  name = 'AddLedgerEntryPosition1763700013000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn(
      'ledger_entries',
      new TableColumn({ name: 'position', type: 'int', isNullable: true }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('ledger_entries', 'position');
  }
}
