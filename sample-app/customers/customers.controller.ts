import {
  BadRequestException,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Patch,
  Put,
  Res,
} from '@nestjs/common';
import { ConditionalRead, ConditionalUpdate, Idempotent } from '../../lib';
import { PatchCustomerDto, ReplaceCustomerDto } from './customer.dto';
import type { Customer } from './customer.entity';
import { CustomersService } from './customers.service';

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function checkId(id: string): string {
  if (!ID.test(id)) {
    throw new BadRequestException(
      'A customer id is 1-64 characters: letters, digits, "_", "." and "-", starting with a letter or digit',
    );
  }
  return id;
}

/** JSON shape of a customer (its version travels in the ETag header). */
function toJson(c: Customer) {
  return { id: c.id, name: c.name, email: c.email };
}

/**
 * Customers with optimistic concurrency: GET answers with the ETag of the version it returns;
 * PUT, PATCH and DELETE require If-Match with that ETag (a stale one gets 412 and nothing is
 * written), and PUT with If-None-Match: * creates (201). An optional Idempotency-Key on PUT and
 * PATCH makes a retry replay the first answer (with its ETag) instead of failing with 412.
 */
@Controller('customers')
export class CustomersController {
  constructor(private readonly customers: CustomersService) {}

  @Get(':id')
  @ConditionalRead()
  async findOne(@Param('id') id: string) {
    const found = await this.customers.find(checkId(id));
    if (!found) throw new NotFoundException(`Customer ${id} not found`);
    return toJson(found.entity);
  }

  @Put(':id')
  @Idempotent({ required: false, fingerprint: { headers: ['if-match', 'if-none-match'] } })
  @ConditionalUpdate()
  async replace(
    @Param('id') id: string,
    @Body() dto: ReplaceCustomerDto,
    @Res({ passthrough: true }) res: any,
  ) {
    const result = await this.customers.replace(checkId(id), dto);
    if (result.created) {
      const location = `/customers/${encodeURIComponent(id)}`;
      if (typeof res.header === 'function') res.header('Location', location);
      else res.setHeader('Location', location);
    }
    return toJson(result.entity);
  }

  @Patch(':id')
  @Idempotent({ required: false, fingerprint: { headers: ['if-match', 'if-none-match'] } })
  @ConditionalUpdate()
  async patch(@Param('id') id: string, @Body() dto: PatchCustomerDto) {
    if (dto.name === undefined && dto.email === undefined) {
      throw new BadRequestException('Give at least one of name, email');
    }
    const result = await this.customers.patch(checkId(id), dto);
    if (!result) throw new NotFoundException(`Customer ${id} not found`);
    return toJson(result.entity);
  }

  @Delete(':id')
  @HttpCode(204)
  @ConditionalUpdate()
  async remove(@Param('id') id: string): Promise<void> {
    if (!(await this.customers.remove(checkId(id)))) {
      throw new NotFoundException(`Customer ${id} not found`);
    }
  }
}
