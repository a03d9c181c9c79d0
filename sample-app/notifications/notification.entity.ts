import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One notification to the customer, written by the notifications service's consumer of
 * `payment.captured`: a second service with its own inbox (consumer `notifications`), fed by its
 * own queue (fan-out, see ../messaging/consumer-services.ts). Like the ledger, no unique
 * constraint on payment_id: one notification per payment is the inbox's job.
 */
@Entity({ name: 'notifications' })
@Index('ix_notifications_payment', ['paymentId'])
export class Notification {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'payment_id', type: 'varchar', length: 36 })
  paymentId!: string;

  @Column({ name: 'customer_id', type: 'varchar', length: 64 })
  customerId!: string;

  /** What the customer is told, e.g. `Payment of 10.00 EUR captured`. */
  @Column({ type: 'varchar', length: 200 })
  text!: string;

  /** The id of the message that produced it (the outbox message id). */
  @Column({ name: 'message_id', type: 'varchar', length: 255 })
  messageId!: string;

  @CreateDateColumn({ name: 'created_at', precision: 3 })
  createdAt!: Date;
}
