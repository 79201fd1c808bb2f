// httpResponse: an object with a numeric statusCode is proxied exactly.
export default async function greet(event, ctx) {
  const name = event.httpDetails.pathParameters.name;
  const excited = event.httpDetails.queryParameters.excited === 'true';
  return {
    statusCode: 200,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-greeted': name },
    body: `${ctx.configuration.greeting}, ${name}${excited ? '!' : '.'}\n`,
  };
}
