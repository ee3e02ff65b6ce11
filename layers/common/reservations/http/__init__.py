"""The API Gateway side: the resolver every function uses and the error responses."""
