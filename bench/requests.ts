// The requests the benchmarks send: the hello route, and the realistic one (a 1 KB order posted as
// JSON with the ten headers a browser or gateway typically sends, two of them redacted by the
// audit trail's defaults).

export const realBody = JSON.stringify({
  customerId: 'cus_4f1e2d3c',
  currency: 'EUR',
  lines: Array.from({ length: 9 }, (_, i) => ({
    sku: `SKU-${100000 + i * 7919}`,
    name: `Stainless steel water bottle, 750 ml #${i}`,
    quantity: 1 + (i % 3),
    unitPrice: 12.5 + i,
  })),
});

export const realHeaders = {
  'content-type': 'application/json',
  accept: 'application/json',
  'accept-encoding': 'gzip, deflate, br',
  'accept-language': 'en-GB,en;q=0.9',
  'user-agent':
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
  authorization: 'Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImJlbmNoIn0.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl',
  cookie: 'session=5b2c8a1f0e9d4c7b; theme=dark',
  'x-forwarded-for': '203.0.113.7',
  'x-request-source': 'checkout-web',
};

/** autocannon's request options for one route. */
export function requestOptions(real: boolean | undefined): {
  method?: 'POST';
  body?: string;
  headers?: Record<string, string>;
} {
  return real ? { method: 'POST', body: realBody, headers: realHeaders } : {};
}
